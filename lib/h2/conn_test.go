package h2

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/h2/h2ctest"
)

// h2cServer serves handler over h2c with prior knowledge only, counting
// the connections it accepts.
func h2cServer(t *testing.T, handler http.HandlerFunc) (addr string, conns *atomic.Int64) {
	t.Helper()
	s := h2ctest.Serve(t, handler, false)
	return s.Addr, &s.Conns
}

// Eight clients with four streams a connection share two connections;
// every request is HTTP/2, every reply whole, and the clients' counts add
// up to the connections the server saw.
func TestClientsShareConnectionsByStreams(t *testing.T) {
	addr, conns := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "not HTTP/2: "+r.Proto, 500)
			return
		}
		w.Header().Set("X-Path", r.URL.Path)
		fmt.Fprintf(w, "hello %s %s", r.URL.Path, r.Header.Get("X-Client"))
	})
	p := &Pool{Addr: addr, Streams: 4}
	var clients []*Conn
	for range 8 {
		clients = append(clients, p.Conn(5*time.Second, 0, h1.NewBudget(h1.DefaultBudget)))
	}
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			var resp h1.Response
			for k := range 20 {
				path := fmt.Sprintf("/p/%d/%d", i, k)
				err := c.Do(h1.NewRequest("GET", path, nil, h1.Field{Name: "X-Client", Value: fmt.Sprint(i)}), &resp)
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				if want := fmt.Sprintf("hello %s %d", path, i); resp.Status != 200 || string(resp.Body) != want || resp.Header("X-Path") != path {
					t.Errorf("client %d: %d %q (X-Path %q), want 200 %q", i, resp.Status, resp.Body, resp.Header("X-Path"), want)
				}
				if resp.WireBytes < len(resp.Body)+9 {
					t.Errorf("wire %d bytes for a %d-byte body", resp.WireBytes, len(resp.Body))
				}
			}
		})
	}
	wg.Wait()
	opened, dropped := p.Counts()
	if conns.Load() != 2 || opened != 2 || dropped != 0 {
		t.Errorf("server saw %d connections, the pool counted %d (%d dropped): want 8 clients / 4 streams = 2", conns.Load(), opened, dropped)
	}
	// A client that lets go frees its place for the next one: no third
	// connection.
	clients[0].Close()
	late := p.Conn(5*time.Second, 0, nil)
	var resp h1.Response
	if err := late.Do(h1.NewRequest("GET", "/late", nil), &resp); err != nil || conns.Load() != 2 {
		t.Errorf("a client taking a freed place: %v, %d connections", err, conns.Load())
	}
	for _, c := range append(clients, late) {
		c.Close()
	}
}

// A reply's fields reach Header as HPACK decoded them, in any case, and a
// name in the trailers too is the trailers' first (a grpc-status there is
// the call's, whatever the headers said before the body).
func TestTrailersFieldsComeFirst(t *testing.T) {
	addr, _ := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Grpc-Status", "0")
		w.Header().Set("Content-Encoding", "identity")
		w.Header().Set("Trailer", "Grpc-Status")
		fmt.Fprint(w, "body")
		w.Header().Set("Grpc-Status", "14")
	})
	c := (&Pool{Addr: addr}).Conn(5*time.Second, 0, nil)
	defer c.Close()
	var resp h1.Response
	if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); err != nil {
		t.Fatal(err)
	}
	if got := resp.Header("Grpc-Status"); got != "14" {
		t.Errorf("grpc-status %q, want the trailer's 14", got)
	}
	if string(resp.Encoding()) != "identity" || string(resp.Body) != "body" {
		t.Errorf("encoding %q, body %q", resp.Encoding(), resp.Body)
	}
}

// Over TLS, h2 is negotiated by ALPN; a server that speaks only HTTP/1.1
// fails the request instead of being measured over HTTP/1.1 unawares.
func TestTLSNegotiatesHTTP2OrFails(t *testing.T) {
	h2 := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Proto) }))
	h2.EnableHTTP2 = true
	h2.StartTLS()
	defer h2.Close()
	cfg := h2.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	c := (&Pool{Addr: h2.Listener.Addr().String(), TLS: cfg}).Conn(5*time.Second, 0, nil)
	var resp h1.Response
	if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); err != nil || string(resp.Body) != "HTTP/2.0" {
		t.Fatalf("over TLS: %v %q, want HTTP/2.0", err, resp.Body)
	}
	c.Close()

	h1only := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Proto) }))
	defer h1only.Close()
	cfg = h1only.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	c = (&Pool{Addr: h1only.Listener.Addr().String(), TLS: cfg}).Conn(5*time.Second, 0, nil)
	if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); err == nil {
		t.Errorf("an HTTP/1.1-only server answered %q over --http2", resp.Body)
	}
	c.Close()

	// A certificate the client does not trust is an error, not a skip.
	c = (&Pool{Addr: h2.Listener.Addr().String(), TLS: &tls.Config{}}).Conn(5*time.Second, 0, nil)
	if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted certificate: %v", err)
	}
	c.Close()
}

// A reply is bounded as h1 bounds it; a slow one times out as a timeout;
// Interrupt ends one in flight at once; a request that is not HTTP is not
// sent.
func TestBoundsTimeoutsAndInterrupt(t *testing.T) {
	var hits atomic.Int64
	addr, _ := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/big":
			w.Write(make([]byte, 10<<10))
		case "/slow":
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		}
	})
	p := &Pool{Addr: addr}
	var resp h1.Response

	c := p.Conn(5*time.Second, 4<<10, nil)
	var tl *h1.TooLargeError
	if err := c.Do(h1.NewRequest("GET", "/big", nil), &resp); !errors.As(err, &tl) {
		t.Errorf("a 10 KiB reply under a 4 KiB bound: %v", err)
	}
	c.Close()

	c = p.Conn(300*time.Millisecond, 0, nil)
	start := time.Now()
	err := c.Do(h1.NewRequest("GET", "/slow", nil), &resp)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || time.Since(start) > 2*time.Second {
		t.Errorf("a 5 s reply with a 300 ms timeout: %v after %v", err, time.Since(start))
	}
	c.Close()

	c = p.Conn(10*time.Second, 0, nil)
	done := make(chan error)
	go func() { done <- c.Do(h1.NewRequest("GET", "/slow", nil), &resp) }()
	time.Sleep(200 * time.Millisecond)
	start = time.Now()
	c.Interrupt()
	select {
	case err := <-done:
		if err == nil {
			t.Error("an interrupted request succeeded")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Interrupt did not end the request in flight")
	}
	if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); !errors.Is(err, h1.ErrClosed) {
		t.Errorf("a request after Interrupt: %v, want refused until Close", err)
	}
	c.Close()
	if err := c.Do(h1.NewRequest("GET", "/", nil), &resp); err != nil {
		t.Errorf("a request after Close: %v, want a new share of a connection", err)
	}
	c.Close()

	before := hits.Load()
	c = p.Conn(time.Second, 0, nil)
	var re *h1.RequestError
	if err := c.Do(h1.NewRequest("GET", "/x", nil, h1.Field{Name: "X-A", Value: "a\r\nX-Injected: 1"}), &resp); !errors.As(err, &re) {
		t.Errorf("a header with CR LF: %v, want a RequestError", err)
	}
	if hits.Load() != before {
		t.Error("a request with CR LF in a header reached the server")
	}
	c.Close()
}
