package h1

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1/h1test"
)

// cannedServer answers each request on a connection with the next reply.
func cannedServer(t *testing.T, replies ...string) (addr string, accepted *int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	n := 0
	go func() {
		i := 0
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n++
			br := bufio.NewReader(c)
			for i < len(replies) {
				req, err := http.ReadRequest(br)
				if err != nil {
					break
				}
				io.Copy(io.Discard, req.Body)
				c.Write([]byte(replies[i]))
				i++
				if strings.Contains(replies[i-1], "Connection: close") {
					break
				}
			}
			c.Close()
		}
	}()
	return ln.Addr().String(), &n
}

// cannedConn is a connection on e to a cannedServer of replies, and the
// count of connections that server accepted.
func (e *engine) cannedConn(t *testing.T, replies ...string) (*Conn, *int) {
	addr, accepted := cannedServer(t, replies...)
	return e.conn(&Conn{Addr: addr, Timeout: 5 * time.Second}), accepted
}

func TestFraming(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		c, accepted := e.cannedConn(t,
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Id: 7\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nTrailer: x\r\n\r\n",
			"HTTP/1.1 204 No Content\r\n\r\n",
			"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno",
			"HTTP/1.0 200 OK\r\n\r\nuntil close",
		)
		var r Response
		want := []struct {
			status int
			body   string
		}{{200, "hello"}, {200, "abcdefg"}, {204, ""}, {404, "no"}, {200, "until close"}}
		for i, w := range want {
			if err := e.do(c, NewRequest("GET", "/x", nil), &r); err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
			if r.Status != w.status || string(r.Body) != w.body {
				t.Errorf("reply %d: %d %q, want %d %q", i, r.Status, r.Body, w.status, w.body)
			}
			if i == 0 && (r.Header("content-type") != "text/plain" || r.WireBytes != len(want[0].body)+len("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n")) {
				t.Errorf("header %q, wire bytes %d", r.Header("content-type"), r.WireBytes)
			}
			if i == 1 && r.Header("X-Id") != "7" {
				t.Errorf("X-Id %q", r.Header("X-Id"))
			}
		}
		if c.Opened != 2 || *accepted != 2 {
			t.Errorf("opened %d, accepted %d: want a new connection only after Connection: close", c.Opened, *accepted)
		}
	})
}

func TestMalformedReplies(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		for _, bad := range []string{"SSH-2.0-OpenSSH\r\n", "HTTP/1.1 2xx OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"} {
			addr, _ := cannedServer(t, bad)
			c := e.conn(&Conn{Addr: addr, Timeout: 2 * time.Second})
			var r Response
			if err := e.do(c, NewRequest("GET", "/", nil), &r); err == nil {
				t.Errorf("%q: no error", bad)
			}
		}
	})
}

func TestRequestBytesAndKeepAlive(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		var got []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got = append(got, r.Method+" "+r.URL.String()+" "+r.Header.Get("X-A")+" "+string(b)+" "+r.Host)
			w.Write([]byte("ok"))
		}))
		defer srv.Close()
		addr := strings.TrimPrefix(srv.URL, "http://")
		c := e.conn(&Conn{Addr: addr})
		var r Response
		req := NewRequest("POST", "/q?x=1", []byte(`{"a":1}`), Field{"X-A", "b"})
		for range 3 {
			if err := e.do(c, req, &r); err != nil || r.Status != 200 {
				t.Fatal(err, r.Status)
			}
		}
		if c.Opened != 1 || len(got) != 3 || got[0] != `POST /q?x=1 b {"a":1} `+addr {
			t.Errorf("opened %d, requests %q", c.Opened, got)
		}
		// A kept-alive connection the server dropped while idle is dialled again.
		srv.CloseClientConnections()
		if err := e.do(c, req, &r); err != nil || c.Opened != 2 {
			t.Errorf("after the server closed the idle connection: %v, opened %d", err, c.Opened)
		}
	})
}

// endlessServer writes head, then body bytes from fill until the client
// goes away: an endless reply.
func endlessServer(t *testing.T, head string, fill []byte) string {
	return h1test.ServeConns(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		c.Write([]byte(head))
		for {
			if _, err := c.Write(fill); err != nil {
				return
			}
		}
	})
}

// A reply past a bound is an error of its request, read no further than
// the bound: never a panic, never probe's memory.
func TestRepliesAreBounded(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		chunk := []byte("4000\r\n" + strings.Repeat("x", 0x4000) + "\r\n")
		for _, tc := range []struct {
			name, head string
			fill       []byte
			want       string
		}{
			{"content-length beyond int64", "HTTP/1.1 200 OK\r\nContent-Length: 999999999999999999999\r\n\r\n", nil, "bad Content-Length"},
			{"content-length 1e17", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999\r\n\r\n", nil, "reply over 1.0 MiB"},
			{"content-length 8 GB", "HTTP/1.1 200 OK\r\nContent-Length: 8000000000\r\n\r\n", []byte("x"), "reply over 1.0 MiB"},
			{"endless body", "HTTP/1.0 200 OK\r\n\r\n", make([]byte, 64<<10), "reply over 1.0 MiB"},
			{"endless chunks", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunk, "reply over 1.0 MiB"},
			{"endless header", "HTTP/1.1 200 OK\r\n", []byte("X-A: b\r\n"), "header over 1.0 MiB"},
			{"endless header line", "HTTP/1.1 200 OK\r\nX-A: ", []byte("b"), "header line over"},
		} {
			addr := endlessServer(t, tc.head, tc.fill)
			c := e.conn(&Conn{Addr: addr, Timeout: 10 * time.Second, MaxBody: 1 << 20})
			var r Response
			err := e.do(c, NewRequest("GET", "/", nil), &r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			}
			if cap(r.Body) > 2<<20 {
				t.Errorf("%s: body buffer of %d bytes for a bound of 1 MiB", tc.name, cap(r.Body))
			}
		}
	})
}

// onceServer answers the first request on each connection, then reads
// the next one and hangs up without a reply; it counts the requests read.
func onceServer(t *testing.T) (string, *atomic.Int64) {
	var n atomic.Int64
	addr := h1test.ServeConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			n.Add(1)
			if i > 0 {
				return
			}
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
		}
	})
	return addr, &n
}

// A request the server may have acted on is sent again only when it is
// idempotent: a POST whose kept-alive connection closed after it was
// written is an error, not a second POST.
func TestOnlyIdempotentRequestsAreRetried(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		for _, tc := range []struct {
			method string
			sent   int64
			fails  bool
		}{{"GET", 3, false}, {"POST", 2, true}} {
			addr, n := onceServer(t)
			c := e.conn(&Conn{Addr: addr, Timeout: 2 * time.Second})
			var r Response
			if err := e.do(c, NewRequest("GET", "/", nil), &r); err != nil {
				t.Fatal(err)
			}
			err := e.do(c, NewRequest(tc.method, "/", []byte("x")), &r)
			// GET: taken and dropped on the kept-alive connection, then sent
			// again on a new one and answered (3 requests read). POST: taken
			// and dropped, not sent again (2).
			if (err != nil) != tc.fails || n.Load() != tc.sent {
				t.Errorf("%s: %v, %d requests read, want %d", tc.method, err, n.Load(), tc.sent)
			}
		}
	})
}

// FuzzReadResponse: any bytes from a server give a reply or an error
// within the bounds; never a panic.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nT: x\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffff\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Response
		err := readResponse(bufio.NewReaderSize(strings.NewReader(string(b)), 4096), false, &body{max: 1 << 16, budget: NewBudget(1 << 20)}, &r, nil)
		if err == nil && len(r.Body) > 1<<16 {
			t.Fatalf("body of %d bytes past the bound", len(r.Body))
		}
	})
}

// Connections share a budget for what they hold beyond their allowances:
// a reply it cannot hold is an error of that request, and a connection's
// big buffer goes back to the budget at its next request.
func TestConnectionsShareAReplyBudget(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		big := strings.Repeat("x", 5<<19) // 2.5 MiB
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/small" {
				w.Write([]byte("ok"))
				return
			}
			w.Write([]byte(big))
		}))
		defer srv.Close()
		addr := strings.TrimPrefix(srv.URL, "http://")
		budget := NewBudget(5 << 19) // 2.5 MiB: one big reply beyond the allowance, not two
		a := e.conn(&Conn{Addr: addr, MaxBody: 8 << 20, Budget: budget})
		b := e.conn(&Conn{Addr: addr, MaxBody: 8 << 20, Budget: budget})
		var ra, rb Response
		if err := e.do(a, NewRequest("GET", "/big", nil), &ra); err != nil || len(ra.Body) != len(big) {
			t.Fatalf("a: %v, %d bytes", err, len(ra.Body))
		}
		var be *BudgetError
		if err := e.do(b, NewRequest("GET", "/big", nil), &rb); !errors.As(err, &be) || !strings.Contains(err.Error(),
			"2.5 MiB all clients may hold") {
			t.Errorf("b while a holds its reply: %v", err)
		}
		if err := e.do(a, NewRequest("GET", "/small", nil), &ra); err != nil {
			t.Fatal(err)
		}
		if err := e.do(b, NewRequest("GET", "/big", nil), &rb); err != nil || len(rb.Body) != len(big) {
			t.Errorf("b after a let go: %v, %d bytes", err, len(rb.Body))
		}
		if free := budget.free.Load(); free < 0 || free > 5<<19 {
			t.Errorf("budget free %d", free)
		}
	})
}

// A reply that takes its share of the budget by its Content-Length and
// then breaks off gives the share back: the budget does not leak.
func TestABrokenReplyGivesItsReservationBack(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					c.Close()
					continue
				}
				if req.URL.Path == "/small" {
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
				} else {
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3145728\r\n\r\n" + strings.Repeat("x", 100<<10)))
				}
				c.Close()
			}
		}()
		budget := NewBudget(4 << 20)
		c := e.conn(&Conn{Addr: ln.Addr().String(), MaxBody: 8 << 20, Budget: budget})
		var r Response
		if err := e.do(c, NewRequest("GET", "/broken", nil), &r); err == nil {
			t.Fatal("a reply cut short: no error")
		}
		if err := e.do(c, NewRequest("GET", "/small", nil), &r); err != nil {
			t.Fatal(err)
		}
		if free := budget.free.Load(); free != 4<<20 {
			t.Errorf("budget free %d after the broken reply, want all %d", free, 4<<20)
		}
	})
}

// A reply's Content-Encoding is read with its header block, the first
// one's value trimmed, and is no reply's but its own.
func TestEncodingIsTheReplysOwn(t *testing.T) {
	replies := []struct{ wire, encoding string }{
		{"HTTP/1.1 200 OK\r\nContent-Encoding:  gzip \r\nContent-Length: 2\r\n\r\nab", "gzip"},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\ncd", ""},
		{"HTTP/1.1 200 OK\r\ncontent-encoding: br\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\nef", "br"},
		{"HTTP/1.1 200 OK\r\nContent-Encoding: \r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\ngh", ""},
	}
	var wires []string
	for _, reply := range replies {
		wires = append(wires, reply.wire)
	}
	engines(t, func(t *testing.T, e *engine) {
		c, _ := e.cannedConn(t, wires...)
		var r Response
		for i, reply := range replies {
			if err := e.do(c, NewRequest("GET", "/", nil), &r); err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
			if want := reply.encoding; string(r.Encoding()) != want || r.Header("Content-Encoding") != want {
				t.Errorf("reply %d: Encoding %q, Header %q, want %q", i, r.Encoding(), r.Header("Content-Encoding"), want)
			}
		}
	})
}

// A status code and a Content-Length are digits and nothing else.
func TestNumbersAreDigits(t *testing.T) {
	for _, bad := range []string{"HTTP/1.1 +20 OK\r\n\r\n", "HTTP/1.1 2 0 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nab", "HTTP/1.1 200 OK\r\nContent-Length: 0x2\r\n\r\nab",
		"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n"} {
		var r Response
		err := readResponse(bufio.NewReader(strings.NewReader(bad)), false, &body{max: 1 << 16}, &r, nil)
		if err == nil {
			t.Errorf("%q: no error (status %d, body %q)", bad, r.Status, r.Body)
		}
	}
	for in, want := range map[string]int{"0": 0, "7": 7, "404": 404, "999999999999999999": 999999999999999999,
		"000000000000000000000007": 7, "9223372036854775807": 9223372036854775807} {
		if n, ok := digits([]byte(in)); !ok || n != want {
			t.Errorf("digits(%q) = %d, %v", in, n, ok)
		}
	}
	for _, in := range []string{"", "-1", "1 ", "9223372036854775808", "12345678901234567890"} {
		if _, ok := digits([]byte(in)); ok {
			t.Errorf("digits(%q) took it", in)
		}
	}
}

// Another transport's reply says its encoding as a reply read here does.
func TestFillSaysTheEncoding(t *testing.T) {
	var r Response
	r.Fill(200, http.Header{"Content-Encoding": {" gzip"}, "X-A": {"b"}}, []byte("x"), 10)
	if string(r.Encoding()) != "gzip" || r.Header("X-A") != "b" {
		t.Errorf("encoding %q, X-A %q", r.Encoding(), r.Header("X-A"))
	}
	r.Fill(200, http.Header{"X-A": {"c"}}, []byte("y"), 10)
	if len(r.Encoding()) != 0 {
		t.Errorf("encoding %q after a reply without one", r.Encoding())
	}
	// HTTP/2's names, lower case, field by field: the first one counts.
	r.Reset(200, []byte("z"), 10)
	r.AddField("content-encoding", "br ")
	r.AddField("content-encoding", "gzip")
	if string(r.Encoding()) != "br" || r.Header("Content-Encoding") != "br" || string(r.Body) != "z" {
		t.Errorf("encoding %q, Content-Encoding %q", r.Encoding(), r.Header("Content-Encoding"))
	}
}

// A request's HTTP/2 header block is built once per authority and then
// sent as is; another authority builds it again.
func TestHeaderBlockBuiltOncePerAuthority(t *testing.T) {
	r := NewRequest("GET", "/x", nil)
	builds := 0
	build := func() []byte { builds++; return []byte{byte(builds)} }
	a1, a2 := r.HeaderBlock("http://a", build), r.HeaderBlock("http://a", build)
	b := r.HeaderBlock("http://b", build)
	if builds != 2 || a1[0] != 1 || a2[0] != 1 || b[0] != 2 {
		t.Errorf("%d builds, blocks %v %v %v", builds, a1, a2, b)
	}
}
