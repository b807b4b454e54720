package h2

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/h1/h1test"
)

// Over HTTP/2 as over HTTP/1.1 (lib/h1's TestRepliesCompleteBeforeTheirStream):
// a reply complete before its stream ends is timed to its result, a stream
// kept open is cut after StreamGrace (the stream, not the connection).
func TestRepliesCompleteBeforeTheirStream(t *testing.T) {
	addr, conns := h2cServer(t, h1test.EventStream())
	p := &Pool{Addr: addr}
	c := p.Conn(10*time.Second, 0, nil)
	defer c.Close()
	req := func(path string) *h1.Request {
		r := h1.NewRequest("POST", path, []byte("{}"))
		r.Watch = h1test.WatchResult
		return r
	}
	var r h1.Response
	start := time.Now()
	if err := c.Do(req("/ends"), &r); err != nil || r.Done.IsZero() || r.Done.Before(start) || r.Cut {
		t.Errorf("a stream that ends: %v, done %v, cut %v", err, r.Done, r.Cut)
	}
	start = time.Now()
	if err := c.Do(req("/open"), &r); err != nil {
		t.Fatalf("a stream kept open: %v", err)
	}
	took := time.Since(start)
	if !r.Cut || r.Done.IsZero() || !h1test.HoldsResult(r.Body) || took < h1.StreamGrace || took > 5*time.Second {
		t.Errorf("a stream kept open: cut %v, done %v, returned after %v, body %q", r.Cut, r.Done, took, r.Body)
	}
	if err := c.Do(req("/ends"), &r); err != nil || conns.Load() != 1 {
		t.Errorf("after a cut stream: %v, %d connections (want the one kept)", err, conns.Load())
	}
	c2 := p.Conn(400*time.Millisecond, 0, nil)
	defer c2.Close()
	if err := c2.Do(req("/never"), &r); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a stream that never holds the result: %v, want a timeout", err)
	}
}

// A request refused before it is sent keeps no Done or Cut of the reply
// before it (lib/h1's TestWatchNotStaleAfterAFailure).
func TestWatchNotStaleAfterAFailure(t *testing.T) {
	addr, _ := h2cServer(t, h1test.EventStream())
	p := &Pool{Addr: addr}
	c := p.Conn(10*time.Second, 0, nil)
	defer c.Close()
	req := h1.NewRequest("POST", "/open", []byte("{}"))
	req.Watch = h1test.WatchResult
	var r h1.Response
	if err := c.Do(req, &r); err != nil || !r.Cut || r.Done.IsZero() {
		t.Fatalf("a stream kept open: %v, cut %v, done %v", err, r.Cut, r.Done)
	}
	bad := h1.NewRequest("POST", "/ends", []byte("{}"), h1.Field{Name: "X-Bad", Value: "a\r\nb"})
	bad.Watch = h1test.WatchResult
	if err := c.Do(bad, &r); err == nil {
		t.Fatal("a request with a CR LF in a header value was sent")
	}
	if !r.Done.IsZero() || r.Cut {
		t.Errorf("a refused request's reply: done %v, cut %v, left from the reply before it", r.Done, r.Cut)
	}
}
