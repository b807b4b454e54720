package h2

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/probehq/probe/lib/h1"
)

// The attacks of a review of lib/h2 (stop 47): each failed before its fix.

// doWithin runs c.Do and fails the test when it has not returned within
// limit: a hostile server may cost a request an error, never a hang.
func doWithin(t *testing.T, c *Conn, req *h1.Request, limit time.Duration) (*h1.Response, error) {
	t.Helper()
	var resp h1.Response
	done := make(chan error, 1)
	go func() { done <- c.Do(req, &resp) }()
	select {
	case err := <-done:
		return &resp, err
	case <-time.After(limit):
		stacks := make([]byte, 1<<20)
		t.Logf("the goroutines:\n%s", stacks[:runtime.Stack(stacks, true)])
		t.Fatalf("%s %s still blocked after %v", req.Method, req.Path, limit)
		return nil, nil
	}
}

// A server that stops reading (its socket's buffers full of PING acks, or
// of a body it never reads) fails the connection within the write bound,
// not holding every client of the connection for ever.
func TestAServerThatStopsReadingFailsTheConnection(t *testing.T) {
	pings := rawServer(t, 100, func(fr *http2.Framer, _ int) {
		id, ok := nextRequest(fr)
		if !ok {
			return
		}
		replyHeaders(fr, id, true)
		for fr.WritePing(false, [8]byte{}) == nil {
		}
	})
	c := (&Pool{Addr: pings}).Conn(time.Second, 0, nil)
	defer c.Close()
	if _, err := doWithin(t, c, h1.NewRequest("GET", "/", nil), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the acks fill both sockets' buffers
	doWithin(t, c, h1.NewRequest("GET", "/", nil), 4*time.Second)

	unread := rawServer(t, 100, func(fr *http2.Framer, _ int) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
		fr.WriteWindowUpdate(0, 1<<31-1-65535)
		time.Sleep(10 * time.Second)
	})
	c = (&Pool{Addr: unread}).Conn(time.Second, 0, nil)
	defer c.Close()
	upload := h1.NewRequest("POST", "/", make([]byte, 16<<20))
	upload.Check(unread) // its bytes made now: under -race a copy of 16 MiB takes a second
	if _, err := doWithin(t, c, upload, 4*time.Second); err == nil {
		t.Error("a 16 MiB body a server never read was sent")
	}
}

// A server that accepts and never sends its SETTINGS: the clients of one
// connection wait for one dial within their own timeouts, not in a queue
// behind each other's dials.
func TestClientsWaitForOneDialWithinTheirTimeouts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	p := &Pool{Addr: l.Addr().String(), Streams: 8}
	var wg sync.WaitGroup
	var worst time.Duration
	var wmu sync.Mutex
	end := time.Now().Add(3 * time.Second)
	for range 8 {
		c := p.Conn(time.Second, 0, nil)
		wg.Go(func() {
			defer c.Close()
			var resp h1.Response
			for time.Now().Before(end) {
				t0 := time.Now()
				c.Do(h1.NewRequest("GET", "/", nil), &resp)
				wmu.Lock()
				worst = max(worst, time.Since(t0))
				wmu.Unlock()
			}
		})
	}
	wg.Wait()
	// Queued behind each other's dials they took 8–28 s; 5 s leaves a
	// loaded machine under -race room without hiding that.
	if worst > 5*time.Second {
		t.Errorf("a request with a 1 s timeout took %v", worst)
	}
}

// A graceful GOAWAY (Go's Server.Shutdown) stops new streams; the ones the
// server took are still answered, and counted as answered.
func TestGracefulGoAwayFinishesTheStreamsTaken(t *testing.T) {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	entered := make(chan struct{}, 1)
	srv := &http.Server{Protocols: &protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		entered <- struct{}{}
		time.Sleep(500 * time.Millisecond)
		io.WriteString(w, "done")
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	p := &Pool{Addr: l.Addr().String(), Streams: 2}
	a, b := p.Conn(3*time.Second, 0, nil), p.Conn(3*time.Second, 0, nil)
	defer a.Close()
	defer b.Close()
	var errA error
	var respA h1.Response
	var wg sync.WaitGroup
	wg.Go(func() { errA = a.Do(h1.NewRequest("POST", "/order", []byte("x")), &respA) })
	select { // the server took the POST's stream (a sleep let a loaded machine shut down first)
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the POST never reached the handler")
	}
	wg.Go(func() { srv.Shutdown(t.Context()) })
	time.Sleep(100 * time.Millisecond)
	var r h1.Response
	b.Do(h1.NewRequest("GET", "/", nil), &r) // sees the GOAWAY; must not end A's stream
	wg.Wait()
	if errA != nil || string(respA.Body) != "done" {
		t.Errorf("the POST the server finished: %v %q", errA, respA.Body)
	}
}

// The reader's HEADERS and a failing connection both end a stream's wait:
// ready closes once.
func TestReadyClosesOnceUnderRace(t *testing.T) {
	for range 20000 {
		st := &stream{ready: make(chan struct{}), more: make(chan struct{}, 1)}
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; st.headersIn() })
		wg.Go(func() { <-start; st.finish(errors.New("closed")) })
		close(start)
		wg.Wait()
	}
}

// A header block that decodes past the bound in one frame (an HPACK bomb:
// one big field, then a one-byte reference to it again and again): the
// Framer hands over what it decoded, truncated; the request fails.
func TestTruncatedHeaderBlockFails(t *testing.T) {
	addr := rawServer(t, 100, func(fr *http2.Framer, _ int) {
		id, ok := nextRequest(fr)
		if !ok {
			return
		}
		block := headerBlock("x-big", strings.Repeat("a", 4000)) // x-big indexed: entry 62
		for len(block) < 16<<10-64 {
			block = append(block, 0xbe) // entry 62 again: 4 KB each
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true})
		fr.WriteData(id, true, []byte("body"))
		time.Sleep(time.Second)
	})
	c := (&Pool{Addr: addr}).Conn(3*time.Second, 0, nil)
	defer c.Close()
	resp, err := doWithin(t, c, h1.NewRequest("GET", "/", nil), 5*time.Second)
	var tl *h1.TooLargeError
	if !errors.As(err, &tl) {
		t.Errorf("a header block decoding to ~48 MB: %v (status %d)", err, resp.Status)
	}
}

// A server that answers before it read the whole upload and resets the
// rest (RFC 9113 §8.1; Go's server does it): the reply is the answer.
func TestAnEarlyReplyIsTheAnswer(t *testing.T) {
	addr, _ := h2cServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "early") })
	c := (&Pool{Addr: addr}).Conn(2*time.Second, 0, nil)
	defer c.Close()
	resp, err := doWithin(t, c, h1.NewRequest("POST", "/upload", make([]byte, 8<<20)), 4*time.Second)
	if err != nil || string(resp.Body) != "early" {
		t.Errorf("Go's server answered at once; probe: %v %q", err, resp.Body)
	}
}

// A body shorter or longer than its content-length is a malformed reply
// (RFC 9113 §8.1.1), not a whole one.
func TestBodyAgainstItsContentLength(t *testing.T) {
	for _, tc := range []struct {
		length, body string
		ok           bool
	}{{"1000", "0123456789", false}, {"4", "0123456789", false}, {"10", "0123456789", true}} {
		addr := rawServer(t, 100, func(fr *http2.Framer, _ int) {
			id, ok := nextRequest(fr)
			if !ok {
				return
			}
			replyHeaders(fr, id, false, "content-length", tc.length)
			fr.WriteData(id, true, []byte(tc.body))
			time.Sleep(time.Second)
		})
		c := (&Pool{Addr: addr}).Conn(2*time.Second, 0, nil)
		resp, err := doWithin(t, c, h1.NewRequest("GET", "/", nil), 4*time.Second)
		if (err == nil) != tc.ok {
			t.Errorf("content-length %s, %d bytes: %v (%d bytes taken)", tc.length, len(tc.body), err, len(resp.Body))
		}
		c.Close()
	}
}

// A connection whose server went silent (it reads, it answers nothing):
// after a request times out with no frame at all from it, the next
// request goes to a new connection, as h1 dials again after a timeout.
func TestAStalledConnectionIsLeftForANewOne(t *testing.T) {
	addr := rawServer(t, 100, func(fr *http2.Framer, n int) {
		for answered := 0; ; answered++ {
			id, ok := nextRequest(fr)
			if !ok {
				return
			}
			if n == 1 && answered == 1 {
				for { // silent from the second request on
					if _, err := fr.ReadFrame(); err != nil {
						return
					}
				}
			}
			replyHeaders(fr, id, false)
			fr.WriteData(id, true, []byte("conn "+string(rune('0'+n))))
		}
	})
	c := (&Pool{Addr: addr}).Conn(500*time.Millisecond, 0, nil)
	defer c.Close()
	var got []string
	for range 3 {
		resp, err := doWithin(t, c, h1.NewRequest("GET", "/", nil), 3*time.Second)
		if err != nil {
			got = append(got, "timeout")
		} else {
			got = append(got, string(resp.Body))
		}
	}
	if strings.Join(got, ", ") != "conn 1, timeout, conn 2" {
		t.Errorf("replies %q, want the first connection's, a timeout, then a new connection's", got)
	}
}

// A reply probe refuses while the server may still send on its stream
// (here a :status that is no number) is reset on the wire, so that the
// server does not count the stream open against its limit.
func TestARefusedReplyIsResetOnTheWire(t *testing.T) {
	reset := make(chan http2.ErrCode, 1)
	addr := rawServer(t, 100, func(fr *http2.Framer, _ int) {
		id, ok := nextRequest(fr)
		if !ok {
			return
		}
		var b bytes.Buffer
		hpack.NewEncoder(&b).WriteField(hpack.HeaderField{Name: ":status", Value: "abc"})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndHeaders: true})
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if rst, ok := f.(*http2.RSTStreamFrame); ok && rst.StreamID == id {
				reset <- rst.ErrCode
				return
			}
		}
	})
	c := (&Pool{Addr: addr}).Conn(2*time.Second, 0, nil)
	defer c.Close()
	if _, err := doWithin(t, c, h1.NewRequest("GET", "/", nil), 4*time.Second); err == nil {
		t.Fatal("a :status of abc was taken")
	}
	select {
	case <-reset:
	case <-time.After(2 * time.Second):
		t.Error("the stream of a refused reply was not reset")
	}
}

// A server that answers an upload at once, before its body came, and does
// not reset the rest (RFC 9113 makes the reset optional): probe stops the
// upload and resets its half, or the server counts the stream open for
// good (here, with a limit of one stream, refusing every later one).
func TestAnEarlyReplyWithoutResetIsClosedByProbe(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	addr := rawServer(t, 1, func(fr *http2.Framer, _ int) {
		open := map[uint32]bool{} // streams the client has not closed
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			mu.Lock()
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
			case *http2.MetaHeadersFrame:
				if len(open) >= 1 { // its SETTINGS_MAX_CONCURRENT_STREAMS
					seen = append(seen, "refused")
					fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
					break
				}
				if !f.StreamEnded() {
					open[f.StreamID] = true
				}
				replyHeaders(fr, f.StreamID, true) // a whole reply, at once
			case *http2.DataFrame:
				if f.StreamEnded() {
					delete(open, f.StreamID)
					seen = append(seen, "end")
				}
			case *http2.RSTStreamFrame:
				delete(open, f.StreamID)
				seen = append(seen, "reset")
			}
			mu.Unlock()
		}
	})
	c := (&Pool{Addr: addr}).Conn(2*time.Second, 0, nil)
	defer c.Close()
	resp, err := doWithin(t, c, h1.NewRequest("POST", "/", make([]byte, 200<<10)), 4*time.Second)
	if err != nil || resp.Status != 200 {
		t.Fatalf("the early reply: %v %d", err, resp.Status)
	}
	if _, err := doWithin(t, c, h1.NewRequest("GET", "/", nil), 4*time.Second); err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Errorf("the next request on the connection: %v; the server saw %v", err, seen)
	}
}

// A connection its group left (stalled, told to go away) opens no new
// stream: the request goes to the group's connection instead.
func TestARetiredConnectionOpensNoStream(t *testing.T) {
	cc := &clientConn{streams: map[uint32]*stream{}, maxActive: 100, wake: make(chan struct{}), active: 1}
	cc.retire() // a stream is still open: it stays, for that one
	if _, err := cc.open(t.Context()); !errors.Is(err, errRetired) {
		t.Errorf("a retired connection's open: %v, want errRetired", err)
	}
}
