package h1

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1/h1test"
)

// recordingServer keeps every byte it receives and answers each header
// block with a short reply.
type recordingServer struct {
	addr string
	got  h1test.Received
}

func newRecordingServer(t *testing.T) *recordingServer {
	s := &recordingServer{}
	s.addr = h1test.ServeConns(t, func(c net.Conn) {
		br := bufio.NewReader(io.TeeReader(c, &s.got))
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimSpace(line)) == 0 {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}
	})
	return s
}

func (s *recordingServer) received() string { return s.got.String() }

// A request that is not HTTP is refused before a byte of it is written:
// nothing reaches the server, the error names the part, and the connection
// serves the next request.
func TestRequestsThatAreNotHTTPAreNotSent(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		smuggle := "x\r\nX-Injected: 1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x"
		for _, tc := range []struct {
			name string
			req  *Request
			part string
		}{
			{"CR LF in a header value", NewRequest("GET", "/", nil, Field{"X-Token", smuggle}), "header X-Token"},
			{"LF in a header value", NewRequest("GET", "/", nil, Field{"X-Token", "a\nb"}), "header X-Token"},
			{"NUL in a header value", NewRequest("GET", "/", nil, Field{"X-Token", "a\x00b"}), "header X-Token"},
			{"colon in a header name", NewRequest("GET", "/", nil, Field{"X-A: b\r\nX-B", "c"}), "header name"},
			{"empty header name", NewRequest("GET", "/", nil, Field{"", "c"}), "header name"},
			{"CR LF in the method", NewRequest("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET", "/smuggled", nil), "method"},
			{"space in the method", NewRequest("G T", "/", nil), "method"},
			{"empty method", NewRequest("", "/", nil), "method"},
			{"CR LF in the target", NewRequest("GET", "/a HTTP/1.1\r\nHost: x\r\n\r\nGET /smuggled", nil), "request target"},
			{"space in the target", NewRequest("GET", "/a b", nil), "request target"},
			{"DEL in the target", NewRequest("GET", "/a\x7f", nil), "request target"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := newRecordingServer(t)
				c := e.conn(&Conn{Addr: s.addr, Timeout: 2 * time.Second})
				var r Response
				err := e.do(c, tc.req, &r)
				if err == nil || !strings.HasPrefix(err.Error(), "request not sent: its "+tc.part) {
					t.Fatalf("Do: %v, want request not sent: its %s …", err, tc.part)
				}
				if c.Opened != 0 {
					t.Errorf("a connection was dialled for a refused request")
				}
				// Refused every time, from the cache.
				if err2 := e.do(c, tc.req, &r); err2 == nil || err2.Error() != err.Error() {
					t.Errorf("second Do: %v, want %v", err2, err)
				}
				if err := e.do(c, NewRequest("GET", "/fine", nil), &r); err != nil || r.Status != 200 {
					t.Fatalf("the next request: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
				got := s.received()
				if got != "GET /fine HTTP/1.1\r\nHost: "+s.addr+"\r\n\r\n" {
					t.Errorf("the server received %q", got)
				}
			})
		}
	})
}

func TestValidRequestsAreSentAsTheyAre(t *testing.T) {
	engines(t, func(t *testing.T, e *engine) {
		s := newRecordingServer(t)
		c := e.conn(&Conn{Addr: s.addr, Timeout: 2 * time.Second})
		var r Response
		req := NewRequest("M-SEARCH", "/a/%2F?q=caf%C3%A9&x=\"é\"", nil, Field{"X-Tab", "a\tb ~ é"}, Field{"!#$%&'*+-.^_`|~", ""})
		if err := e.do(c, req, &r); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		want := "M-SEARCH /a/%2F?q=caf%C3%A9&x=\"é\" HTTP/1.1\r\nHost: " + s.addr + "\r\nX-Tab: a\tb ~ é\r\n!#$%&'*+-.^_`|~: \r\n\r\n"
		if got := s.received(); got != want {
			t.Errorf("received %q, want %q", got, want)
		}
	})
}
