package h1

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
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
