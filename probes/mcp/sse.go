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

// maxWatchedEvent bounds the data of one event the watch holds (its copy
// is outside the reply's bound and the connections' budget): past it the
// watch gives up, and the reply is read to its stream's end, as without
// a watch.
const maxWatchedEvent = 4 << 20

// sseWatch is an event stream read so far. Only the current event's data
// is kept: of any other line, its first bytes until they tell its field
// (an endless comment or unknown field costs nothing). Lines end at CR
// LF, LF or CR, as the event stream format says.
type sseWatch struct {
	notSSE  bool
	started bool   // a byte of the stream has been seen
	gaveUp  bool   // an event's data passed maxWatchedEvent
	cr      bool   // the last byte was a CR: an LF next is its line end's
	field   []byte // the current line's start, until it says "data:" or not (at most 5 bytes)
	kind    byte   // the current line: 0 its field not yet known, 'd' data (' ' one space may follow "data:"), 'o' other
	empty   bool   // the current line has no byte yet
	data    []byte // the current event's data lines, joined
	inData  bool   // data holds a line of this event
}

func (w *sseWatch) more(b []byte) bool {
	if w.notSSE || w.gaveUp || len(b) == 0 {
		return false
	}
	if !w.started {
		w.started, w.empty = true, true
		if b[0] == '{' || b[0] == '[' {
			w.notSSE = true
			return false
		}
	}
	for len(b) > 0 {
		if w.cr {
			w.cr = false
			if b[0] == '\n' { // a CR LF's LF: the line ended at its CR
				b = b[1:]
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			w.take(b)
			return false
		}
		w.take(b[:i])
		w.cr = b[i] == '\r'
		b = b[i+1:]
		if w.gaveUp {
			return false
		}
		if w.endLine() {
			return true
		}
	}
	return false
}

// take adds part of the current line.
func (w *sseWatch) take(part []byte) {
	if len(part) == 0 || w.gaveUp {
		return
	}
	w.empty = false
	if w.kind == 0 {
		n := min(len(part), 5-len(w.field))
		w.field, part = append(w.field, part[:n]...), part[n:]
		if len(w.field) < 5 {
			return
		}
		if string(w.field) != "data:" {
			w.kind = 'o'
			return
		}
		w.kind = ' '
		w.dataLine()
	}
	if w.kind == ' ' && len(part) > 0 {
		w.kind = 'd'
		part = bytes.TrimPrefix(part, []byte(" "))
	}
	if w.kind == 'o' {
		return
	}
	if len(w.data)+len(part) > maxWatchedEvent {
		w.gaveUp, w.data = true, nil
		return
	}
	w.data = append(w.data, part...)
}

// dataLine begins a data line of the current event.
func (w *sseWatch) dataLine() {
	if w.inData {
		w.data = append(w.data, '\n')
	}
	w.inData = true
}

// endLine ends the current line: a blank one dispatches the event, and
// says whether it answers.
func (w *sseWatch) endLine() bool {
	defer func() { w.field, w.kind, w.empty = w.field[:0], 0, true }()
	switch {
	case w.empty:
		if w.inData && answers(w.data) {
			return true
		}
		w.data, w.inData = w.data[:0], false
	case w.kind == 0 && string(w.field) == "data": // a data field without a colon: an empty line of data
		w.dataLine()
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
// lines joined (events without data left out). Lines end at CR LF, LF or
// CR, as sseWatch reads them.
func sseEvents(stream []byte) [][]byte {
	var events, data [][]byte
	for len(stream) > 0 {
		line := stream
		if i := bytes.IndexAny(stream, "\r\n"); i >= 0 {
			line = stream[:i]
			if stream[i] == '\r' && i+1 < len(stream) && stream[i+1] == '\n' {
				i++
			}
			stream = stream[i+1:]
		} else {
			stream = nil
		}
		switch {
		case len(line) == 0 && len(data) > 0:
			events, data = append(events, bytes.Join(data, []byte("\n"))), nil
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		case string(line) == "data":
			data = append(data, nil)
		}
	}
	if len(data) > 0 {
		events = append(events, bytes.Join(data, []byte("\n")))
	}
	return events
}
