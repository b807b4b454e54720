package h2

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/probehq/probe/lib/h1"
)

// The windows probe grants: a stream's reply may be this far ahead of what
// its client has read, the connection's all streams' together. A reply
// read to its end gives its credit back at once, so a small reply never
// waits for a WINDOW_UPDATE.
const (
	streamWindow = 1 << 20
	connWindow   = 16 << 20
	// maxHeaderList bounds a reply's header block, decoded.
	maxHeaderList = 1 << 20
)

// clientConn is one HTTP/2 connection of probe's own, on x/net/http2's
// Framer and hpack. Its clients write their frames into one buffer and
// the last writer of a burst flushes it, so the HEADERS of many streams
// leave in one write; one reader goroutine hands each stream its frames.
type clientConn struct {
	nc net.Conn
	fr *http2.Framer

	wmu  sync.Mutex // the buffer, the encoder, the framer's writes
	bw   *bufio.Writer
	henc *hpack.Encoder
	hbuf bytes.Buffer
	// blockKey is scheme://authority, the key of a request's cached block.
	blockKey string
	// readerBusy: the reader has frames in hand and flushes the buffer
	// before it next waits for the socket, so a writer leaves its frames
	// there (a burst of replies' next requests leaves in one write).
	readerBusy bool
	br         *bufio.Reader

	mu        sync.Mutex // all below
	streams   map[uint32]*stream
	nextID    uint32
	active    int
	maxActive int    // the server's SETTINGS_MAX_CONCURRENT_STREAMS
	maxFrame  uint32 // the server's SETTINGS_MAX_FRAME_SIZE
	sendConn  int64  // what the connection may still send of bodies
	sendInit  int64  // the server's SETTINGS_INITIAL_WINDOW_SIZE
	wake      chan struct{}
	goAway    bool
	err       error // sticky: the connection is done
	recvOwed  int64 // credit of the connection read but not yet given back
	readerEnd chan struct{}
	settled   chan struct{} // closed at the server's first SETTINGS
}

// stream is one request's reply as the reader hands it over.
type stream struct {
	id       uint32
	mu       sync.Mutex
	ready    chan struct{} // closed when the headers came or the stream failed
	more     chan struct{} // a token: body bytes, the end or a failure
	status   int
	header   http.Header
	trailer  http.Header
	buf      []byte
	ended    bool
	err      error
	sendWin  int64 // what the stream may still send of its body
	received int64 // body bytes the stream's window has taken
	granted  int64 // what probe gave back of the stream's window
	released bool  // its slot is given back
	wire     int
}

// dialConn opens an HTTP/2 connection: TLS with ALPN h2, or h2c with prior
// knowledge, then the preface and probe's settings.
func dialConn(ctx context.Context, addr string, cfg *tls.Config) (*clientConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		cfg = cfg.Clone()
		cfg.NextProtos = []string{"h2"}
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			nc.Close()
			return nil, fmt.Errorf("%s does not speak HTTP/2 over TLS (ALPN chose %q)", addr, p)
		}
		nc = tc
	}
	cc := &clientConn{nc: nc, bw: bufio.NewWriterSize(nc, 32<<10), streams: map[uint32]*stream{}, nextID: 1, maxActive: 100,
		maxFrame: 16 << 10, sendConn: 65535, sendInit: 65535, wake: make(chan struct{}), readerEnd: make(chan struct{}),
		settled: make(chan struct{})}
	cc.br = bufio.NewReaderSize(nc, 32<<10)
	cc.fr = http2.NewFramer(cc.bw, cc.br)
	cc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cc.fr.MaxHeaderListSize = maxHeaderList
	cc.fr.SetMaxReadFrameSize(16 << 10)
	cc.henc = hpack.NewEncoder(&cc.hbuf)
	cc.bw.WriteString(http2.ClientPreface)
	cc.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: maxHeaderList})
	cc.fr.WriteWindowUpdate(0, connWindow-65535)
	if err := cc.bw.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	go cc.readLoop()
	// The server's settings before the first stream: its limit on streams
	// at once, its frame size, its window.
	select {
	case <-cc.settled:
		return cc, nil
	case <-cc.readerEnd:
		return nil, cc.Err()
	case <-ctx.Done():
		cc.Close()
		return nil, fmt.Errorf("%s sent no HTTP/2 settings: %w", addr, ctx.Err())
	}
}

// Err is the connection's failure, nil while it can take streams.
func (cc *clientConn) Err() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err == nil && cc.goAway {
		return errGoAway
	}
	return cc.err
}

var errGoAway = fmt.Errorf("%w: the server sent GOAWAY", h1.ErrClosed)

// Close ends the connection and every stream on it.
func (cc *clientConn) Close() {
	cc.fail(fmt.Errorf("%w: the connection was closed", h1.ErrClosed))
	<-cc.readerEnd
}

// fail ends the connection with err (the first error stays).
func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	if cc.err == nil {
		cc.err = err
	}
	streams := cc.streams
	cc.streams = map[uint32]*stream{}
	cc.broadcast()
	cc.mu.Unlock()
	cc.nc.Close()
	for _, st := range streams {
		st.finish(err)
	}
}

// broadcast wakes whoever waits for a stream slot or send window; cc.mu held.
func (cc *clientConn) broadcast() {
	close(cc.wake)
	cc.wake = make(chan struct{})
}

// write runs frames under the write lock and flushes them, unless the
// reader is busy: it flushes before it waits for the socket again.
func (cc *clientConn) write(frames func() error) error {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	err := frames()
	var u *unsent
	if !cc.readerBusy && (err == nil || errors.As(err, &u)) {
		if ferr := cc.bw.Flush(); ferr != nil {
			err = ferr
		}
	}
	if err != nil && !errors.As(err, &u) {
		go cc.fail(fmt.Errorf("%w: %v", h1.ErrClosed, err))
	}
	return err
}

// frameInHand says whether the reader's buffer holds a whole frame: the
// next read does not wait for the socket.
func (cc *clientConn) frameInHand() bool {
	if cc.br.Buffered() < 9 {
		return false // (Peek would wait for the socket)
	}
	h, err := cc.br.Peek(9)
	if err != nil || len(h) < 9 {
		return false
	}
	n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	return cc.br.Buffered() >= 9+n
}

// idle is the reader about to wait for the socket: the clients its last
// frames woke write their next requests first (Gosched: on one P they
// run now), then everything written since leaves in one write.
func (cc *clientConn) idle() error {
	runtime.Gosched()
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	cc.readerBusy = false
	return cc.bw.Flush()
}

// busy is the reader with a frame in hand again.
func (cc *clientConn) busy() {
	cc.wmu.Lock()
	cc.readerBusy = true
	cc.wmu.Unlock()
}

// unsent is a stream refused before any of its frames was written: the
// connection is not at fault.
type unsent struct{ err error }

func (u *unsent) Error() string { return u.err.Error() }
func (u *unsent) Unwrap() error { return u.err }

// RoundTrip sends req on a new stream and returns once its headers came;
// the body is read with readBody, and the stream released with done.
func (cc *clientConn) RoundTrip(ctx context.Context, authority, scheme string, req *h1.Request) (*stream, error) {
	st, err := cc.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := cc.send(ctx, st, authority, scheme, req); err != nil {
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

// open takes a stream slot, waiting while the server's limit is reached.
func (cc *clientConn) open(ctx context.Context) (*stream, error) {
	cc.mu.Lock()
	for {
		if cc.err != nil || cc.goAway {
			err := cc.err
			if err == nil {
				err = errGoAway
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

// abandon ends a stream its client no longer reads: RST_STREAM when the
// server may still send on it, and the credit of what it held given back.
func (cc *clientConn) abandon(st *stream) {
	st.mu.Lock()
	ended, unread := st.ended, len(st.buf)
	st.buf, st.ended = nil, true
	if st.err == nil {
		st.err = errAbandoned
	}
	st.mu.Unlock()
	cc.release(st, !ended, unread)
}

var errAbandoned = errors.New("the stream was abandoned")

// release forgets the stream, resets it when asked, and gives back the
// connection's credit of unread bytes.
func (cc *clientConn) release(st *stream, reset bool, unread int) {
	cc.mu.Lock()
	if st.released {
		cc.mu.Unlock()
		return
	}
	st.released = true
	delete(cc.streams, st.id)
	cc.active--
	cc.broadcast()
	dead := cc.err != nil
	owed := cc.owe(int64(unread))
	reset = reset && st.id != 0 // never numbered: nothing was sent
	cc.mu.Unlock()
	if dead || (!reset && owed == 0) {
		return
	}
	cc.write(func() error {
		if reset {
			if err := cc.fr.WriteRSTStream(st.id, http2.ErrCodeCancel); err != nil {
				return err
			}
		}
		if owed > 0 {
			return cc.fr.WriteWindowUpdate(0, uint32(owed))
		}
		return nil
	})
}

// owe adds n read bytes to the connection's credit and returns what is to
// be given back now (half the window or more); cc.mu held.
func (cc *clientConn) owe(n int64) int64 {
	cc.recvOwed += n
	if cc.recvOwed < connWindow/2 {
		return 0
	}
	owed := cc.recvOwed
	cc.recvOwed = 0
	return owed
}

// body reads the stream with ctx's deadline: it ends the stream on the
// way out (the reply is whole, or its client gave up).
type body struct {
	cc  *clientConn
	st  *stream
	ctx context.Context
	off int64 // bytes read, whose stream credit is owed
}

func (b *body) Read(p []byte) (int, error) {
	st := b.st
	for {
		st.mu.Lock()
		if len(st.buf) > 0 {
			n := copy(p, st.buf)
			st.buf = st.buf[n:]
			if len(st.buf) == 0 {
				st.buf = st.buf[:0:0]
			}
			ended := st.ended
			st.mu.Unlock()
			b.credit(n, ended)
			return n, nil
		}
		if st.ended {
			err := st.err
			st.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		st.mu.Unlock()
		select {
		case <-st.more:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
}

// credit gives the server back what the client read: the stream's window
// at half of it (not once the stream ended: nothing more comes on it),
// the connection's at half of its own.
func (b *body) credit(n int, ended bool) {
	cc := b.cc
	b.off += int64(n)
	var streamIncr int64
	if !ended && b.off >= streamWindow/2 {
		streamIncr, b.off = b.off, 0
		b.st.mu.Lock()
		b.st.granted += streamIncr
		b.st.mu.Unlock()
	}
	cc.mu.Lock()
	connIncr := cc.owe(int64(n))
	dead := cc.err != nil
	cc.mu.Unlock()
	if dead || streamIncr == 0 && connIncr == 0 {
		return
	}
	cc.write(func() error {
		if streamIncr > 0 {
			if err := cc.fr.WriteWindowUpdate(b.st.id, uint32(streamIncr)); err != nil {
				return err
			}
		}
		if connIncr > 0 {
			return cc.fr.WriteWindowUpdate(0, uint32(connIncr))
		}
		return nil
	})
}

// Close releases the stream: reset when its reply is not whole.
func (b *body) Close() error {
	b.cc.abandon(b.st)
	return nil
}

// finish ends the stream with err (nil: its reply is whole).
func (st *stream) finish(err error) {
	st.mu.Lock()
	if !st.ended {
		st.ended = true
		if st.err == nil {
			st.err = err
		}
	}
	st.mu.Unlock()
	st.signal()
	st.headersIn()
}

func (st *stream) signal() {
	select {
	case st.more <- struct{}{}:
	default:
	}
}

// headersIn closes ready once.
func (st *stream) headersIn() {
	select {
	case <-st.ready:
	default:
		close(st.ready)
	}
}

// readLoop reads every frame the server sends and hands it on.
func (cc *clientConn) readLoop() {
	defer close(cc.readerEnd)
	busy := false
	for {
		if busy && !cc.frameInHand() {
			busy = false
			if err := cc.idle(); err != nil {
				cc.fail(fmt.Errorf("%w: %v", h1.ErrClosed, err))
				return
			}
		}
		f, err := cc.fr.ReadFrame()
		if !busy && err == nil {
			busy = true
			cc.busy()
		}
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				if st := cc.stream(se.StreamID); st != nil {
					cc.resetStream(st, se.Code)
					st.finish(fmt.Errorf("stream error: %v", se))
				}
				continue
			}
			var ce http2.ConnectionError
			if errors.As(err, &ce) { // the server broke the protocol: say so before leaving
				cc.goAwayWith(http2.ErrCode(ce))
			}
			cc.fail(fmt.Errorf("%w: %v", h1.ErrClosed, err))
			return
		}
		if err := cc.handle(f); err != nil {
			code := http2.ErrCodeProtocol
			var fe *flowError
			if errors.As(err, &fe) {
				code = http2.ErrCodeFlowControl
			}
			cc.goAwayWith(code)
			cc.fail(fmt.Errorf("%w: %v", h1.ErrClosed, err))
			return
		}
	}
}

// goAwayWith tells the server the connection ends for code, and lingers
// a moment for it to read that before the socket closes under its data.
func (cc *clientConn) goAwayWith(code http2.ErrCode) {
	// The last stream id is the server's own streams' (none: push is off).
	err := cc.write(func() error { // flushed now: the socket's write side closes next
		if err := cc.fr.WriteGoAway(0, code, nil); err != nil {
			return err
		}
		return cc.bw.Flush()
	})
	if err != nil {
		return
	}
	// Closing with the server's bytes unread would reset the connection,
	// and a reset drops the GOAWAY from the server's receive queue: read
	// what still comes, for a moment, first (this is the reader).
	if tc, ok := cc.nc.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	cc.nc.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
	io.Copy(io.Discard, io.LimitReader(cc.nc, 1<<20))
}

// flowError is a window the server overflowed or overran.
type flowError struct{ msg string }

func (e *flowError) Error() string { return e.msg }

func (cc *clientConn) stream(id uint32) *stream {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.streams[id]
}

// handle is one frame's effect; an error ends the connection.
func (cc *clientConn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := cc.settings(f); err != nil {
			return err
		}
		select {
		case <-cc.settled:
		default:
			close(cc.settled)
		}
		return cc.write(func() error { return cc.fr.WriteSettingsAck() })
	case *http2.PingFrame:
		if f.IsAck() {
			return nil
		}
		data := f.Data
		return cc.write(func() error { return cc.fr.WritePing(true, data) })
	case *http2.GoAwayFrame:
		cc.goAwayFrom(f.LastStreamID, f.ErrCode)
	case *http2.WindowUpdateFrame:
		cc.mu.Lock()
		var over *stream
		if f.StreamID == 0 {
			cc.sendConn += int64(f.Increment)
			if cc.sendConn > 1<<31-1 {
				cc.mu.Unlock()
				return &flowError{"the server's WINDOW_UPDATEs took the connection's window past 2^31-1"}
			}
		} else if st := cc.streams[f.StreamID]; st != nil {
			if st.sendWin += int64(f.Increment); st.sendWin > 1<<31-1 {
				over = st
			}
		}
		cc.broadcast()
		cc.mu.Unlock()
		if over != nil { // reset on the wire before its client hears of it
			err := cc.resetStream(over, http2.ErrCodeFlowControl)
			over.finish(errors.New("the server's WINDOW_UPDATEs took the stream's window past 2^31-1"))
			return err
		}
	case *http2.RSTStreamFrame:
		if st := cc.stream(f.StreamID); st != nil {
			st.finish(fmt.Errorf("the server reset the stream (%v)", f.ErrCode))
		}
	case *http2.MetaHeadersFrame:
		cc.headers(f)
	case *http2.DataFrame:
		return cc.data(f)
	case *http2.PushPromiseFrame:
		return errors.New("a PUSH_PROMISE though push is off")
	}
	return nil
}

// settings applies the server's settings.
func (cc *clientConn) settings(f *http2.SettingsFrame) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			cc.maxActive = int(min(s.Val, 1<<16))
		case http2.SettingMaxFrameSize:
			cc.maxFrame = s.Val
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - cc.sendInit
			cc.sendInit = int64(s.Val)
			for _, st := range cc.streams {
				st.sendWin += delta
			}
		}
		return nil
	})
	cc.broadcast()
	return err
}

// goAwayFrom stops new streams; those the server did not take fail as a
// closed connection (sent again elsewhere when idempotent).
func (cc *clientConn) goAwayFrom(last uint32, code http2.ErrCode) {
	cc.mu.Lock()
	cc.goAway = true
	var lost []*stream
	for id, st := range cc.streams {
		if id > last {
			lost = append(lost, st)
		}
	}
	cc.broadcast()
	cc.mu.Unlock()
	for _, st := range lost {
		st.finish(fmt.Errorf("%w: GOAWAY (%v) before the stream was taken", h1.ErrClosed, code))
	}
}

// headers are a reply's headers, a 1xx's (skipped), or its trailers.
func (cc *clientConn) headers(f *http2.MetaHeadersFrame) {
	st := cc.stream(f.StreamID)
	if st == nil {
		return
	}
	wire := 9 + int(f.Length) // the HEADERS frame (its CONTINUATIONs, rare, not counted)
	st.mu.Lock()
	if st.status != 0 { // trailers
		st.trailer = fieldsOf(f.RegularFields())
		st.wire += wire
		st.mu.Unlock()
		if f.StreamEnded() {
			st.finish(nil)
		} else {
			st.finish(errors.New("trailers without the stream's end"))
		}
		return
	}
	status, err := strconv.Atoi(f.PseudoValue("status"))
	if err != nil || status < 100 || status > 999 {
		st.mu.Unlock()
		st.finish(fmt.Errorf("a reply's :status %q", f.PseudoValue("status")))
		return
	}
	if status < 200 {
		st.mu.Unlock()
		return // an interim reply: the final one follows
	}
	st.status, st.header, st.wire = status, fieldsOf(f.RegularFields()), st.wire+wire
	st.mu.Unlock()
	st.headersIn()
	if f.StreamEnded() {
		st.finish(nil)
	}
}

func fieldsOf(fs []hpack.HeaderField) http.Header {
	h := make(http.Header, len(fs))
	for _, f := range fs {
		k := http.CanonicalHeaderKey(f.Name)
		h[k] = append(h[k], f.Value)
	}
	return h
}

// data is a DATA frame's payload for its stream, within the windows.
func (cc *clientConn) data(f *http2.DataFrame) error {
	n := int64(f.Length)
	cc.mu.Lock()
	st := cc.streams[f.StreamID]
	cc.mu.Unlock()
	if st == nil {
		// A stream already reset or released: its bytes still took the
		// connection's window.
		cc.mu.Lock()
		owed := cc.owe(n)
		cc.mu.Unlock()
		if owed > 0 {
			return cc.write(func() error { return cc.fr.WriteWindowUpdate(0, uint32(owed)) })
		}
		return nil
	}
	st.mu.Lock()
	if st.status == 0 {
		st.mu.Unlock()
		st.finish(errors.New("DATA before the reply's headers"))
		return nil
	}
	payload := f.Data()
	st.received += int64(len(payload))
	if st.received > streamWindow+st.granted {
		st.mu.Unlock()
		return &flowError{fmt.Sprintf("stream %d sent past its window", st.id)}
	}
	if !st.ended {
		st.buf = append(st.buf, payload...)
	}
	st.wire += 9 + int(n)
	st.mu.Unlock()
	st.signal()
	if f.StreamEnded() {
		st.finish(nil)
	}
	if pad := n - int64(len(payload)); pad > 0 { // padding is never read: its credit goes back now
		cc.mu.Lock()
		owed := cc.owe(pad)
		cc.mu.Unlock()
		if owed > 0 {
			return cc.write(func() error { return cc.fr.WriteWindowUpdate(0, uint32(owed)) })
		}
	}
	return nil
}

// resetStream ends st on the wire with code and forgets it; what it held
// unread goes back to the connection's window.
func (cc *clientConn) resetStream(st *stream, code http2.ErrCode) error {
	st.mu.Lock()
	unread := len(st.buf)
	st.buf = nil
	st.mu.Unlock()
	cc.mu.Lock()
	owed := cc.owe(int64(unread))
	delete(cc.streams, st.id) // its client releases the slot
	cc.mu.Unlock()
	return cc.write(func() error {
		if err := cc.fr.WriteRSTStream(st.id, code); err != nil {
			return err
		}
		if owed > 0 {
			return cc.fr.WriteWindowUpdate(0, uint32(owed))
		}
		return nil
	})
}
