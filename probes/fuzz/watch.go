package fuzz

import (
	"bytes"
	"strings"
	"sync"
)

// panicWatch reads a target's stderr for panics that net/http recovered:
// the process lives, the connection is closed, and the log line names the
// client's address, which tells which request caused it.
type panicWatch struct {
	mu      sync.Mutex
	partial []byte
	byAddr  map[string]*strings.Builder
	current *strings.Builder // the trace being read, until a blank line
	lines   int
}

func newPanicWatch() *panicWatch { return &panicWatch{byAddr: map[string]*strings.Builder{}} }

const panicMarker = "http: panic serving "

func (w *panicWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > 1<<20 { // a line without end: not a trace
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

func (w *panicWatch) line(l string) {
	if i := strings.Index(l, panicMarker); i >= 0 {
		rest := l[i+len(panicMarker):]
		addr, _, _ := strings.Cut(rest, ": ")
		b := &strings.Builder{}
		b.WriteString(l[i:])
		b.WriteByte('\n')
		w.byAddr[addr] = b
		w.current, w.lines = b, 0
		return
	}
	if w.current == nil {
		return
	}
	if strings.TrimSpace(l) == "" && w.lines > 0 || w.lines > 200 {
		w.current = nil
		return
	}
	w.current.WriteString(l)
	w.current.WriteByte('\n')
	w.lines++
}

// has says whether a recovered panic was logged for a client address.
func (w *panicWatch) has(addr string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.byAddr[addr]
	return ok
}

// take returns and forgets the recovered panic logged for a client address.
func (w *panicWatch) take(addr string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.byAddr[addr]
	if !ok {
		return "", false
	}
	delete(w.byAddr, addr)
	return b.String(), true
}
