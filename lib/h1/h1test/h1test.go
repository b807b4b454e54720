// Package h1test is, for tests and benchmarks only, loopback servers that
// speak HTTP/1.1 by hand: a test decides every byte of the reply, and a
// benchmark measures a client beside a server that does nearly nothing.
package h1test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
)

// ServeConns is a loopback server that runs handle on each connection it
// accepts, each in a goroutine of its own and closed after it, until the
// test ends. It returns the server's address.
func ServeConns(tb testing.TB, handle func(c net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// Canned answers every request with reply as soon as its header block
// ends, allocating nothing per request: the cost a benchmark measures is
// the client's. It returns the server's address.
func Canned(tb testing.TB, reply []byte) string {
	return ServeConns(tb, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimSpace(line)) == 0 {
				c.Write(reply)
			}
		}
	})
}

// EventStream answers as an MCP server answers a JSON-RPC call with an
// event stream: a notification, then (unless the path is /never) the
// result; then on /open it keeps the stream open until the client goes,
// and elsewhere it ends it.
func EventStream() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
		w.(http.Flusher).Flush()
		if r.URL.Path != "/never" {
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
			w.(http.Flusher).Flush()
		}
		if r.URL.Path == "/open" || r.URL.Path == "/never" {
			<-r.Context().Done()
		}
	}
}

// HoldsResult says whether a body of EventStream holds the result.
func HoldsResult(body []byte) bool {
	return bytes.Contains(body, []byte(`"result":{}}`+"\n\n"))
}

// WatchResult is a Request.Watch for EventStream's replies.
func WatchResult() func(more []byte) bool {
	var body []byte
	return func(more []byte) bool {
		body = append(body, more...)
		return HoldsResult(body)
	}
}

// Received is every byte a server's connections read (tee each
// connection's reads into it), safe for them all at once: what a test
// checks reached the wire.
type Received struct {
	mu  sync.Mutex
	got bytes.Buffer
}

func (r *Received) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got.Write(p)
}

// String is all that was received so far.
func (r *Received) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got.String()
}
