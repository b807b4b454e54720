package h1

import (
	"bytes"
	"io"
	"net/http"
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
	resp.Reset(status, body, wire)
	for name, values := range header {
		for _, v := range values {
			resp.AddField(name, v)
		}
	}
}

// Reset begins the reply of another transport: its status, its body and
// what crossed the wire for it; its header fields follow, an AddField
// each (HTTP/2's reader hands them over as HPACK decoded them, no map).
func (resp *Response) Reset(status int, body []byte, wire int) {
	resp.Status, resp.Body, resp.WireBytes = status, body, wire
	resp.header, resp.close = resp.header[:0], false
	resp.encoding, resp.Done, resp.Cut = nil, time.Time{}, false
}

// AddField adds a header field as a line, for Header: the first one
// named Content-Encoding (in any case) is the reply's Encoding.
func (resp *Response) AddField(name, value string) {
	at := len(resp.header) + len(name) + len(": ")
	resp.header = append(append(append(append(resp.header, name...), ": "...), value...), crlf...)
	if resp.encoding == nil && len(name) == len("Content-Encoding") && asciiEqualFold([]byte(name), "Content-Encoding") {
		resp.encoding = bytes.TrimSpace(resp.header[at : at+len(value)])
	}
}
