package mcp

import (
	"bytes"
	"encoding/json"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
)

// post is a JSON-RPC request to an MCP endpoint. Its reply may be an event
// stream that the server keeps open after the result; the reply is timed
// to the result (h1.Request.Watch).
func post(t *probes.Target, path string, body []byte, header ...h1.Field) *h1.Request {
	r := t.Request("POST", path, body, header...)
	r.Watch = watchRPCReply
	return r
}

// watchRPCReply is a reply's watch: it reads an event stream as it comes,
// each byte once (a stream of a million small events costs its length, not
// its length squared), and says complete at the first event that holds a
// JSON-RPC result or error (what readRPCReply takes as the reply). A body
// that starts as JSON is not an event stream: it is read to its end.
func watchRPCReply() func(more []byte) bool {
	var w sseWatch
	return w.more
}

// sseWatch is an event stream read so far: the current line's start and
// the current event's data.
type sseWatch struct {
	notSSE bool
	line   []byte // the current line, not yet ended
	data   []byte // the current event's data lines, joined
	inData bool   // data holds a line of this event
}

func (w *sseWatch) more(b []byte) bool {
	if w.notSSE {
		return false
	}
	if len(w.line) == 0 && !w.inData && len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		w.notSSE = true
		return false
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.line = append(w.line, b...)
			return false
		}
		line := bytes.TrimSuffix(append(w.line, b[:i]...), []byte("\r"))
		b = b[i+1:]
		switch {
		case len(line) == 0:
			if w.inData && answers(w.data) {
				return true
			}
			w.data, w.inData = w.data[:0], false
		case bytes.HasPrefix(line, []byte("data:")):
			if w.inData {
				w.data = append(w.data, '\n')
			}
			w.data = append(w.data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
			w.inData = true
		}
		w.line = line[:0] // its buffer, for the next line
	}
	return false
}

// answers says whether an event's data is a JSON-RPC result or error.
func answers(data []byte) bool {
	if !bytes.Contains(data, []byte(`"result"`)) && !bytes.Contains(data, []byte(`"error"`)) {
		return false // a notification, decoded for nothing
	}
	var m struct {
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	return json.Unmarshal(data, &m) == nil && m.Method == "" && (m.Result != nil || m.Error != nil)
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
