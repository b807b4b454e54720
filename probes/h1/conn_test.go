package h1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

func TestFraming(t *testing.T) {
	addr, accepted := cannedServer(t,
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Id: 7\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nTrailer: x\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
	)
	c := &Conn{Addr: addr, Timeout: 5 * time.Second}
	var r Response
	want := []struct {
		status int
		body   string
	}{{200, "hello"}, {200, "abcdefg"}, {204, ""}, {404, "no"}, {200, "until close"}}
	for i, w := range want {
		if err := c.Do(NewRequest("GET", "/x", nil), &r); err != nil {
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
}

func TestMalformedReplies(t *testing.T) {
	for _, bad := range []string{"SSH-2.0-OpenSSH\r\n", "HTTP/1.1 2xx OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"} {
		addr, _ := cannedServer(t, bad)
		c := &Conn{Addr: addr, Timeout: 2 * time.Second}
		var r Response
		if err := c.Do(NewRequest("GET", "/", nil), &r); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestRequestBytesAndKeepAlive(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.String()+" "+r.Header.Get("X-A")+" "+string(b)+" "+r.Host)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := &Conn{Addr: addr}
	var r Response
	req := NewRequest("POST", "/q?x=1", []byte(`{"a":1}`), Field{"X-A", "b"})
	for range 3 {
		if err := c.Do(req, &r); err != nil || r.Status != 200 {
			t.Fatal(err, r.Status)
		}
	}
	if c.Opened != 1 || len(got) != 3 || got[0] != `POST /q?x=1 b {"a":1} `+addr {
		t.Errorf("opened %d, requests %q", c.Opened, got)
	}
	// A kept-alive connection the server dropped while idle is dialled again.
	srv.CloseClientConnections()
	if err := c.Do(req, &r); err != nil || c.Opened != 2 {
		t.Errorf("after the server closed the idle connection: %v, opened %d", err, c.Opened)
	}
}
