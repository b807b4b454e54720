package h2

// A request's way out: a stream slot, its id, its HEADERS and body.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/probehq/probe/lib/h1"
)

// RoundTrip sends req on a new stream and returns once its headers came;
// the body is read with readBody, and the stream released with done.
func (cc *clientConn) RoundTrip(ctx context.Context, authority, scheme string, req *h1.Request) (*stream, error) {
	st, err := cc.open(ctx)
	if err != nil {
		return nil, err
	}
	st.head = req.Method == "HEAD"
	// A stream the server ended while the body was going out (a reply
	// before the whole upload, a reset) is read for what it holds.
	if err := cc.send(ctx, st, authority, scheme, req); err != nil && !errors.Is(err, errEndedEarly) {
		cc.abandon(st)
		return nil, err
	}
	select {
	case <-st.ready:
	case <-ctx.Done():
		cc.abandon(st)
		return nil, ctx.Err()
	}
	st.mu.Lock()
	err = st.err
	st.mu.Unlock()
	if st.status == 0 {
		cc.abandon(st)
		return nil, err
	}
	return st, nil
}

// errRetired: a stream refused by a connection that takes no new ones (a
// GOAWAY, or its group left it); nothing of it was sent.
var errRetired = fmt.Errorf("%w: the connection takes no new stream", h1.ErrClosed)

// errEndedEarly: the server ended the stream before its request's body
// was all sent; what it replied is the answer.
var errEndedEarly = errors.New("the server ended the stream before the request's body was sent")

// open takes a stream slot, waiting while the server's limit is reached.
func (cc *clientConn) open(ctx context.Context) (*stream, error) {
	cc.mu.Lock()
	for {
		if cc.err != nil || cc.goAway || cc.retired {
			err := cc.err
			if err == nil {
				err = errRetired // nothing sent: another connection takes it
			}
			cc.mu.Unlock()
			return nil, err
		}
		if cc.active < cc.maxActive {
			break
		}
		wake := cc.wake
		cc.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		cc.mu.Lock()
	}
	st := &stream{ready: make(chan struct{}), more: make(chan struct{}, 1), sendWin: cc.sendInit}
	cc.active++
	cc.mu.Unlock()
	return st, nil
}

// number gives the stream its id as its HEADERS are written (under wmu):
// ids must reach the server in increasing order.
func (cc *clientConn) number(st *stream) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err != nil {
		return &unsent{cc.err}
	}
	if cc.nextID > 1<<31-1 {
		cc.goAway = true // no ids left: a new connection takes the next stream
		return &unsent{errGoAway}
	}
	st.id = cc.nextID
	cc.nextID += 2
	cc.streams[st.id] = st
	return nil
}

// send writes the request's HEADERS (and CONTINUATIONs) and its body.
func (cc *clientConn) send(ctx context.Context, st *stream, authority, scheme string, req *h1.Request) error {
	hasBody := len(req.Body) > 0
	err := cc.write(func() error {
		if err := cc.number(st); err != nil {
			return err
		}
		if cc.blockKey == "" { // one pool, one authority: made once, not per request
			cc.blockKey = scheme + "://" + authority
		}
		block := req.HeaderBlock(cc.blockKey, func() []byte { return cc.encodeHeaders(authority, scheme, req) })
		first := true
		for first || len(block) > 0 {
			n := min(len(block), int(cc.maxFrameSize()))
			frag := block[:n]
			block = block[n:]
			var err error
			if first {
				err = cc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: st.id, BlockFragment: frag,
					EndStream: !hasBody, EndHeaders: len(block) == 0})
				st.endedOnWire(false, false, !hasBody)
			} else {
				err = cc.fr.WriteContinuation(st.id, len(block) == 0, frag)
			}
			if err != nil {
				return err
			}
			first = false
		}
		return nil
	})
	if err != nil || !hasBody {
		return err
	}
	for body := req.Body; len(body) > 0; {
		n, err := cc.takeSendWindow(ctx, st, len(body))
		if err != nil {
			return err
		}
		chunk := body[:n]
		body = body[n:]
		if err := cc.write(func() error { return cc.fr.WriteData(st.id, len(body) == 0, chunk) }); err != nil {
			return err
		}
		st.endedOnWire(false, false, len(body) == 0)
	}
	return nil
}

func (cc *clientConn) maxFrameSize() uint32 {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.maxFrame
}

// takeSendWindow waits until the stream and the connection may send some of
// want bytes, and takes them (at most a frame).
func (cc *clientConn) takeSendWindow(ctx context.Context, st *stream, want int) (int, error) {
	cc.mu.Lock()
	for {
		if cc.err != nil {
			err := cc.err
			cc.mu.Unlock()
			return 0, err
		}
		if st.isEnded() {
			cc.mu.Unlock()
			return 0, errEndedEarly
		}
		if n := min(int64(want), st.sendWin, cc.sendConn, int64(cc.maxFrame)); n > 0 {
			st.sendWin -= n
			cc.sendConn -= n
			cc.mu.Unlock()
			return int(n), nil
		}
		wake := cc.wake
		cc.mu.Unlock()
		select {
		case <-wake:
		case <-st.more: // the stream's end (a token its body's reader does not need: it checks first)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		cc.mu.Lock()
	}
}

// hopHeaders are HTTP/1's connection-specific fields, which HTTP/2 forbids.
var hopHeaders = map[string]bool{"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true,
	"upgrade": true, "host": true, "te": true}

// encodeHeaders is the request's header block, without HPACK's dynamic
// table (the encoder's is 0: each block stands alone, so a request's block
// is built once and sent as is on any connection).
func (cc *clientConn) encodeHeaders(authority, scheme string, req *h1.Request) []byte {
	cc.hbuf.Reset()
	cc.henc.SetMaxDynamicTableSizeLimit(0)
	f := func(name, value string) { cc.henc.WriteField(hpack.HeaderField{Name: name, Value: value}) }
	f(":method", req.Method)
	f(":scheme", scheme)
	f(":authority", authority)
	f(":path", req.Path)
	for _, h := range req.Header {
		name := strings.ToLower(h.Name)
		if hopHeaders[name] && !(name == "te" && strings.EqualFold(h.Value, "trailers")) { // gRPC's te: trailers stays
			continue
		}
		f(name, h.Value)
	}
	if len(req.Body) > 0 || req.Method == "POST" || req.Method == "PUT" || req.Method == "PATCH" {
		f("content-length", strconv.Itoa(len(req.Body)))
	}
	return cc.hbuf.Bytes()
}
