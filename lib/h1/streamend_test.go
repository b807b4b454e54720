package h1

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1/h1test"
)

// A reply complete before its stream ends (an MCP server's event stream)
// is timed to its result: a stream kept open is cut StreamGrace later,
// one that ends keeps its connection, one that never completes times out.
func TestRepliesCompleteBeforeTheirStream(t *testing.T) {
	srv := httptest.NewServer(h1test.EventStream())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	engines(t, func(t *testing.T, e *engine) {
		req := func(path string) *Request {
			r := NewRequest("POST", path, []byte("{}"))
			r.Watch = h1test.WatchResult
			return r
		}
		c := e.conn(&Conn{Addr: addr, Timeout: 10 * time.Second})
		defer c.Close()
		var r Response
		for i := range 2 {
			start := time.Now()
			if err := e.do(c, req("/ends"), &r); err != nil {
				t.Fatalf("a stream that ends: %v", err)
			}
			if r.Done.IsZero() || r.Done.Before(start) || r.Cut {
				t.Errorf("a stream that ends (%d): done %v after the start, cut %v", i, r.Done.Sub(start), r.Cut)
			}
		}
		if c.Opened != 1 || c.Dropped != 0 {
			t.Errorf("streams that end: %d connections opened, %d dropped; want one kept", c.Opened, c.Dropped)
		}

		start := time.Now()
		if err := e.do(c, req("/open"), &r); err != nil {
			t.Fatalf("a stream kept open: %v", err)
		}
		took := time.Since(start)
		if !r.Cut || r.Done.IsZero() || !h1test.HoldsResult(r.Body) {
			t.Errorf("a stream kept open: cut %v, done %v, body %q", r.Cut, r.Done, r.Body)
		}
		// Returned after the grace, long before the 10 s timeout; timed to the result.
		if took < StreamGrace || took > 5*time.Second || took-r.Done.Sub(start) < StreamGrace*9/10 {
			t.Errorf("a stream kept open: returned after %v, complete after %v", took, r.Done.Sub(start))
		}
		if c.Dropped != 0 {
			t.Errorf("probe's own cut counted as the server's close (%d)", c.Dropped)
		}
		if err := e.do(c, req("/ends"), &r); err != nil || c.Opened != 2 {
			t.Errorf("the request after a cut: %v, %d connections opened (want a new one)", err, c.Opened)
		}

		c2 := e.conn(&Conn{Addr: addr, Timeout: 400 * time.Millisecond})
		defer c2.Close()
		if err := e.do(c2, req("/never"), &r); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("a stream that never holds the result: %v, want a timeout", err)
		}
		// Without a Watch the reply is the whole stream.
		c3 := e.conn(&Conn{Addr: addr, Timeout: 10 * time.Second})
		defer c3.Close()
		if err := e.do(c3, NewRequest("POST", "/ends", []byte("{}")), &r); err != nil || !r.Done.IsZero() || r.Cut {
			t.Errorf("no Watch: %v, done %v, cut %v", err, r.Done, r.Cut)
		}
	})
}

// A request that fails before its reply is read (the server gone: the
// dial refused) leaves no Done or Cut of the reply before it in resp: the
// caller would time the failure to that reply's completion and count its
// cut again.
func TestWatchNotStaleAfterAFailure(t *testing.T) {
	srv := httptest.NewServer(h1test.EventStream())
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := &Conn{Addr: addr, Timeout: 10 * time.Second}
	defer c.Close()
	req := NewRequest("POST", "/open", []byte("{}"))
	req.Watch = h1test.WatchResult
	var r Response
	if err := c.Do(req, &r); err != nil || !r.Cut || r.Done.IsZero() {
		t.Fatalf("a stream kept open: %v, cut %v, done %v", err, r.Cut, r.Done)
	}
	srv.Close()
	if err := c.Do(req, &r); err == nil {
		t.Fatal("a request to a closed server did not fail")
	}
	if !r.Done.IsZero() || r.Cut {
		t.Errorf("a failed request's reply: done %v, cut %v, left from the reply before it", r.Done, r.Cut)
	}
}

// A stream that ends within its grace leaves its connection with a live
// deadline: a POST later on it still learns that the server has closed
// the connection meanwhile (closedByPeer, which an expired deadline
// blinds) and goes on a fresh one, rather than failing unsent-twice.
func TestWatchLeavesNoExpiredDeadline(t *testing.T) {
	event := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	reply := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconv.FormatInt(int64(len(event)), 16) + "\r\n" + event + "\r\n0\r\n\r\n"
	addr := h1test.ServeConns(t, func(c net.Conn) { // one reply a connection, then closed unannounced
		br := bufio.NewReader(c)
		n := 0
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if v, ok := strings.CutPrefix(strings.ToLower(line), "content-length: "); ok {
				n, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if line == "\r\n" {
				break
			}
		}
		io.ReadFull(br, make([]byte, n))
		io.WriteString(c, reply)
		time.Sleep(20 * time.Millisecond)
	})
	c := &Conn{Addr: addr, Timeout: 10 * time.Second}
	defer c.Close()
	var r Response
	for i := range 2 {
		req := NewRequest("POST", "/", []byte("{}"))
		req.Watch = h1test.WatchResult
		if err := c.Do(req, &r); err != nil || r.Done.IsZero() || r.Cut {
			t.Fatalf("request %d: %v, done %v, cut %v", i, err, r.Done, r.Cut)
		}
		time.Sleep(3 * StreamGrace)
	}
	if c.Opened != 2 {
		t.Errorf("%d connections opened, want 2", c.Opened)
	}
}
