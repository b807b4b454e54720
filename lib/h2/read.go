package h2

// The connection's reader: every frame the server sends, handed on.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/probehq/probe/lib/h1"
)

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
		cc.frames.Add(1)
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
			st.endedOnWire(true, false, false)
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
	if f.StreamEnded() {
		st.endedOnWire(false, true, false)
	}
	if f.Truncated {
		// The Framer stops decoding at MaxHeaderListSize and hands over
		// what it had: the fields after it (a grpc-status) are lost.
		cc.resetStream(st, http2.ErrCodeCancel)
		st.finish(&h1.TooLargeError{What: "header", Limit: maxHeaderList})
		return
	}
	wire := 9 + int(f.Length) // the HEADERS frame (its CONTINUATIONs, rare, not counted)
	st.mu.Lock()
	if st.status != 0 { // trailers
		st.trailer = f.RegularFields()
		st.wire += wire
		short := st.shortBody()
		st.mu.Unlock()
		switch {
		case !f.StreamEnded():
			st.finish(errors.New("trailers without the stream's end"))
		case short != nil:
			st.finish(short)
		default:
			st.finish(nil)
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
	st.status, st.header, st.wire = status, f.RegularFields(), st.wire+wire
	if cl := contentLengths(st.header); len(cl) > 0 && !st.head && status != 204 && status != 304 {
		n, err := strconv.ParseInt(cl[0], 10, 64)
		if err != nil || n < 0 || len(cl) > 1 && slices.ContainsFunc(cl, func(v string) bool { return v != cl[0] }) {
			st.mu.Unlock()
			st.finish(fmt.Errorf("a reply's content-length %q", strings.Join(cl, ", ")))
			return
		}
		st.lenSaid, st.bodyLen = true, n
	}
	short := st.shortBody()
	st.mu.Unlock()
	st.headersIn()
	if f.StreamEnded() {
		st.finish(short)
	}
}

// shortBody is the error of a reply that ends here with fewer bytes than
// its content-length said (nil when none was said, or all came); st.mu
// held.
func (st *stream) shortBody() error {
	if st.lenSaid && st.got != st.bodyLen {
		return fmt.Errorf("%w: a body of %d bytes, its content-length said %d", io.ErrUnexpectedEOF, st.got, st.bodyLen)
	}
	return nil
}

// contentLengths are the values of fs's content-length fields (HTTP/2's
// names are lower case: the Framer refuses others).
func contentLengths(fs []hpack.HeaderField) []string {
	var cl []string
	for _, f := range fs {
		if f.Name == "content-length" {
			cl = append(cl, f.Value)
		}
	}
	return cl
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
		return cc.giveBack(n)
	}
	st.mu.Lock()
	if f.StreamEnded() {
		st.remoteEnd = true
	}
	if st.status == 0 {
		st.mu.Unlock()
		st.finish(errors.New("DATA before the reply's headers"))
		return nil
	}
	payload := f.Data()
	st.received += n // padding too: the server's window counts it
	if st.received > streamWindow+st.granted {
		st.mu.Unlock()
		return &flowError{fmt.Sprintf("stream %d sent past its window", st.id)}
	}
	if !st.ended {
		st.buf = append(st.buf, payload...)
	}
	st.got += int64(len(payload))
	var malformed error
	if st.lenSaid && st.got > st.bodyLen {
		malformed = fmt.Errorf("a body past its content-length of %d bytes", st.bodyLen)
	} else if f.StreamEnded() {
		malformed = st.shortBody()
	}
	// Padding is never read: its credit goes back now, the stream's while
	// more may come on it.
	pad := n - int64(len(payload))
	streamPad := int64(0)
	if pad > 0 && !f.StreamEnded() {
		streamPad = pad
		st.granted += pad
	}
	st.wire += 9 + int(n)
	st.mu.Unlock()
	st.signal()
	if malformed != nil {
		if !f.StreamEnded() {
			cc.resetStream(st, http2.ErrCodeProtocol)
		}
		st.finish(malformed)
	} else if f.StreamEnded() {
		st.finish(nil)
	}
	if streamPad > 0 {
		if err := cc.write(func() error { return cc.fr.WriteWindowUpdate(st.id, uint32(streamPad)) }); err != nil {
			return err
		}
	}
	return cc.giveBack(pad)
}
