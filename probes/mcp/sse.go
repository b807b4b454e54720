package mcp

import (
	"bytes"
	"encoding/json"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
)

// post is a JSON-RPC request to an MCP endpoint. Its reply may be an event
// stream that the server keeps open after the result; the reply is timed
// to the result (h1.Request.Complete).
func post(t *probes.Target, path string, body []byte, header ...h1.Field) *h1.Request {
	r := t.Request("POST", path, body, header...)
	r.Complete = holdsRPCReply
	return r
}

// holdsRPCReply says whether an event stream's complete events so far
// hold a JSON-RPC result or error (what readRPCReply takes as the reply).
// A JSON body is not an event stream: it is read to its end.
func holdsRPCReply(stream []byte) bool {
	if len(stream) == 0 || stream[0] == '{' || stream[0] == '[' {
		return false
	}
	// Only whole events: the last blank line ends the last of them.
	end := max(bytes.LastIndex(stream, []byte("\n\n")), bytes.LastIndex(stream, []byte("\n\r\n")))
	if end < 0 {
		return false
	}
	for _, data := range sseEvents(stream[:end+1]) {
		var m struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &m) == nil && m.Method == "" && (m.Result != nil || m.Error != nil) {
			return true
		}
	}
	return false
}

// sseEvents are the data of an event stream's events, each event's data
// lines joined (events without data left out).
func sseEvents(stream []byte) [][]byte {
	var events, data [][]byte
	for _, line := range bytes.Split(stream, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0 && len(data) > 0:
			events, data = append(events, bytes.Join(data, []byte("\n"))), nil
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
	}
	if len(data) > 0 {
		events = append(events, bytes.Join(data, []byte("\n")))
	}
	return events
}
