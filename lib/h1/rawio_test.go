package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1/h1test"
)

// pair is a connected loopback TCP pair: the client end read and written
// through rawIO, the server end as it is.
func pair(t *testing.T) (*rawIO, net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	t.Cleanup(func() { nc.Close(); srv.Close() })
	r := newRawIO(nc)
	if r == nil {
		t.Fatal("a TCP connection has no raw socket")
	}
	return r, nc, srv
}

func TestRawIOReadsWritesAndEnds(t *testing.T) {
	r, _, srv := pair(t)
	// Larger than the socket buffers: the write parks on EAGAIN and goes on.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte)
	go func() { b, _ := io.ReadAll(io.LimitReader(srv, int64(len(big)))); got <- b }()
	if n, err := r.Write(big); n != len(big) || err != nil {
		t.Fatalf("wrote %d of %d: %v", n, len(big), err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("the server read %d bytes, not what was written", len(b))
	}
	srv.Write([]byte("reply"))
	buf := make([]byte, 64)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "reply" {
		t.Fatalf("read %q: %v", buf[:n], err)
	}
	srv.Close()
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the peer closed: %d, %v; want io.EOF", n, err)
	}
}

func TestRawIOKeepsDeadlinesAndErrors(t *testing.T) {
	r, nc, srv := pair(t)
	nc.SetDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := r.Read(make([]byte, 8))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !strings.HasPrefix(err.Error(), "read tcp ") {
		t.Fatalf("past the deadline: %v, want a timeout said as net.Conn says it", err)
	}
	nc.SetDeadline(time.Time{})
	// A reset (the peer closes with unread data and SO_LINGER 0).
	srv.(*net.TCPConn).SetLinger(0)
	srv.Close()
	time.Sleep(20 * time.Millisecond)
	_, err = r.Read(make([]byte, 8))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after a reset: %v, want ECONNRESET", err)
	}
}

// Send's request is written by the next Read, which then waits for the
// reply: a small request at once, one larger than the socket's buffers in
// parts as the server reads it, a reply that comes late, a peer that is
// gone (the write's error is Sent's, so the request counts as unsent),
// and a deadline that passes while the reply is awaited (a read error:
// the request was sent).
func TestRawIOSendsWithinTheRead(t *testing.T) {
	r, nc, srv := pair(t)
	for _, req := range [][]byte{[]byte("GET / HTTP/1.1\r\n\r\n"), bytes.Repeat([]byte("0123456789abcdef"), 1<<18)} {
		go func() {
			b, _ := io.ReadAll(io.LimitReader(srv, int64(len(req))))
			time.Sleep(20 * time.Millisecond) // the reply comes after the read parked
			srv.Write(append([]byte("got "), b[:3]...))
		}()
		r.Send(req)
		buf := make([]byte, 64)
		n, err := r.Read(buf)
		if err != nil || string(buf[:n]) != "got "+string(req[:3]) || r.Sent() != nil {
			t.Fatalf("%d-byte request: read %q, %v, sent: %v", len(req), buf[:n], err, r.Sent())
		}
	}

	nc.SetDeadline(time.Now().Add(50 * time.Millisecond))
	r.Send([]byte("GET /slow HTTP/1.1\r\n\r\n"))
	if _, err := r.Read(make([]byte, 64)); !errors.Is(err, syscall.ETIMEDOUT) && !isTimeout(err) || r.Sent() != nil {
		t.Fatalf("a reply past the deadline: %v, sent: %v; want a read timeout of a sent request", err, r.Sent())
	}
	nc.SetDeadline(time.Time{})

	srv.(*net.TCPConn).SetLinger(0)
	srv.Close() // a reset: the next write fails
	time.Sleep(20 * time.Millisecond)
	var err error
	for range 3 { // the first write after a reset may still be taken
		r.Send([]byte("GET / HTTP/1.1\r\n\r\n"))
		if _, err = r.Read(make([]byte, 64)); r.Sent() != nil {
			break
		}
	}
	if r.Sent() == nil {
		t.Fatalf("writes to a reset connection: read %v, and no write failed", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// closingServer answers each connection's first request and then, as
// close says, half-closes it and lingers (reading what comes, as a
// lingering close does) or closes it outright, without announcing either.
func closingServer(t *testing.T, halfClose bool) string {
	return h1test.ServeConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			l, err := br.ReadString('\n')
			if err != nil || l == "\r\n" {
				break
			}
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		if halfClose {
			c.(*net.TCPConn).CloseWrite()
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			io.Copy(io.Discard, c)
		}
	})
}

// A connection the server closed, unannounced, after its reply: the next
// request is sent again on a new connection at once, whether it follows
// at once (the connection hot: written inside its read, woken by the
// reset the request draws) or after the server's end of file has been
// seen (a half-close that lingers draws no reset: the request is written
// and read apart, so the end of file is read, not waited past).
func TestAnUnannouncedCloseIsRetriedAtOnce(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		for _, tc := range []struct {
			name      string
			halfClose bool
			gap       time.Duration
		}{{"closed, next at once", false, 0}, {"closed, next after 100 ms", false, 100 * time.Millisecond},
			{"half-closed, lingering, next after 100 ms", true, 100 * time.Millisecond}} {
			c := e.conn(&Conn{Addr: closingServer(t, tc.halfClose), Timeout: 2 * time.Second})
			var resp Response
			req := NewRequest("GET", "/", nil)
			for i := range 5 {
				time.Sleep(tc.gap)
				start := time.Now()
				if err := e.do(c, req, &resp); err != nil || resp.Status != 200 {
					t.Fatalf("%s: request %d: %v, status %d", tc.name, i, err, resp.Status)
				}
				if d := time.Since(start); d > 500*time.Millisecond {
					t.Errorf("%s: request %d took %v: it waited for the deadline", tc.name, i, d)
				}
			}
			if c.Opened != 5 {
				t.Errorf("%s: %d connections for 5 requests, want one each", tc.name, c.Opened)
			}
		}
	})
}
