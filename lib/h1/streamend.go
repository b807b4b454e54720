package h1

import "time"

// StreamGrace is how long a reply's stream may stay open once its body is
// complete (Request.Watch). The official MCP SDK ends an event stream
// right after its result, so the connection is kept; a server that keeps
// the stream open costs each such request this wait, then its connection.
const StreamGrace = 100 * time.Millisecond

// streamEnd ends a reply whose body is complete before its stream is:
// the reply is timed when complete first holds, and the stream's last
// wait is armed (grace).
type streamEnd struct {
	watch func(more []byte) bool
	grace func()
	seen  int // of the body, what watch has been told
	done  time.Time
}

// check is told the body so far, after each read: watch hears what came.
func (e *streamEnd) check(body []byte) {
	if e == nil || !e.done.IsZero() || len(body) <= e.seen {
		return
	}
	more := body[e.seen:]
	e.seen = len(body)
	if e.watch(more) {
		e.done = time.Now()
		e.grace()
	}
}

// cut says whether a body read's error came after the body was complete:
// then the stream is cut (the connection closes) and the reply stands.
func (e *streamEnd) cut(resp *Response) bool {
	if e == nil || e.done.IsZero() {
		return false
	}
	resp.close, resp.Cut = true, true
	return true
}
