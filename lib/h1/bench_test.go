package h1

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1/h1test"
)

// fastServer answers every request with a 2-byte reply as soon as its
// header block ends: the cost measured is the client's.
func fastServer(b *testing.B) string {
	return h1test.Canned(b, []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
}

var benchHeader = []Field{{"User-Agent", "probe/1 (load test)"}, {"Accept-Encoding", "gzip"}, {"Authorization", "Bearer 0123456789abcdef"}}

// BenchmarkDo is the load path: one prepared request sent again and again
// on a kept-alive connection.
func BenchmarkDo(b *testing.B) {
	c := &Conn{Addr: fastServer(b), Timeout: 5 * time.Second}
	req := NewRequest("GET", "/notes/some-note?x=1", nil, benchHeader...)
	var r Response
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Do(req, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoFreshRequest builds the request for every call, as a
// scenario's steps do: its bytes (and their checks) cost each time.
func BenchmarkDoFreshRequest(b *testing.B) {
	c := &Conn{Addr: fastServer(b), Timeout: 5 * time.Second}
	var r Response
	b.ReportAllocs()
	for b.Loop() {
		req := NewRequest("GET", "/notes/some-note?x=1", nil, benchHeader...)
		if err := c.Do(req, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestBytes is serialising alone.
func BenchmarkRequestBytes(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		req := NewRequest("POST", "/notes/some-note?x=1", []byte(`{"a":1}`), benchHeader...)
		if raw, err := req.bytes("127.0.0.1:8080"); err != nil || len(raw) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestCheck is the checks alone (what BenchmarkRequestBytes
// pays once per request built, and a prepared request once in all).
func BenchmarkRequestCheck(b *testing.B) {
	req := NewRequest("POST", "/notes/some-note?x=1", []byte(`{"a":1}`), benchHeader...)
	for b.Loop() {
		if err := req.check("127.0.0.1:8080"); err != nil {
			b.Fatal(err)
		}
	}
}

// repeatReader hands out one reply again and again, a read each: the
// parse measured without a socket.
type repeatReader struct{ reply []byte }

func (r *repeatReader) Read(p []byte) (int, error) { return copy(p, r.reply), nil }

// BenchmarkReadResponse is the reply's parse alone, on net/http's reply
// of bench/trivialserver (three headers, 100 bytes of body).
func BenchmarkReadResponse(b *testing.B) {
	reply := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: Wed, 02 Dec 2026 05:00:00 GMT\r\n" +
		"Content-Length: 100\r\n\r\n" + string(bytes.Repeat([]byte("x"), 99)) + "\n")
	br := bufio.NewReaderSize(&repeatReader{reply}, 32<<10)
	lim := &body{max: DefaultMaxBody}
	var r Response
	b.ReportAllocs()
	for b.Loop() {
		if err := readResponse(br, false, lim, &r, nil); err != nil || len(r.Body) != 100 {
			b.Fatal(err)
		}
	}
}
