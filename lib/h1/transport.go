package h1

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// What another transport (HTTP/2, lib/h2) needs of this one: the same
// checks of a request (Request.Check), the same bounds on a reply, and a Response filled
// as this package fills it, so the engine above sees one kind of reply.

// ReadBody reads a reply's body from r to its end into the connection's
// reply buffer, within MaxBody and the Budget, as a reply of its own is
// read: the bytes live until the next request. The connection is not
// dialled for it.
func (c *Conn) ReadBody(r io.Reader) ([]byte, error) {
	b := c.bodyLimits(&c.reply)
	out, err := b.readAll(r, b.buf[:0], nil)
	b.buf = out
	return out, err
}

// ReadBodyUntil is ReadBody for a request with a Watch (watch is its
// reply's): grace is called once the body is complete (it must make the
// stream's reads end within StreamGrace), and done is when it was. An
// error after that is the stream's cut, not the request's: the body is
// the reply.
func (c *Conn) ReadBodyUntil(r io.Reader, watch func(more []byte) bool, grace func()) (body []byte, done time.Time, err error) {
	b := c.bodyLimits(&c.reply)
	end := &streamEnd{watch: watch, grace: grace}
	out, err := b.readAll(r, b.buf[:0], end)
	b.buf = out
	if err != nil && !end.done.IsZero() {
		err = nil
	}
	return out, end.done, err
}

// Release gives back what the last reply's buffers hold beyond the
// allowance (ReadBody's transport calls it before the next request).
func (c *Conn) Release(resp *Response) { c.release(resp) }

// Fill makes resp the reply of another transport: its status, its header
// fields (as lines, for Header) and its body; wire is what crossed the
// wire for it.
func (resp *Response) Fill(status int, header http.Header, body []byte, wire int) {
	var b strings.Builder
	for name, values := range header {
		for _, v := range values {
			b.WriteString(name)
			b.WriteString(": ")
			b.WriteString(v)
			b.WriteString("\r\n")
		}
	}
	resp.Status, resp.Body, resp.WireBytes = status, body, wire
	resp.header, resp.close = append(resp.header[:0], b.String()...), false
	resp.encoding, resp.Done, resp.Cut = nil, time.Time{}, false
	if v := header.Values("Content-Encoding"); len(v) > 0 {
		resp.encoding = []byte(strings.TrimSpace(v[0]))
	}
}
