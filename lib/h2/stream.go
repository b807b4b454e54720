package h2

// A stream's reply as its client reads it, and its windows' credit.

import (
	"context"
	"errors"
	"io"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// stream is one request's reply as the reader hands it over.
type stream struct {
	id       uint32
	mu       sync.Mutex
	ready    chan struct{} // closed when the headers came or the stream failed
	readyOne sync.Once     // the reader and a failing connection both close it
	more     chan struct{} // a token: body bytes, the end or a failure
	status   int
	header   []hpack.HeaderField // as HPACK decoded them: names in lower case
	trailer  []hpack.HeaderField
	buf      []byte
	ended    bool
	// How the stream's two halves ended on the wire: reset (by either
	// side), the server's END_STREAM, probe's. One not closed both ways
	// when its client lets go (a fault of its reply, an early reply to an
	// upload cut short) is reset, or the server counts it open.
	wireReset bool
	remoteEnd bool
	localEnd  bool
	err       error
	sendWin   int64 // what the stream may still send of its body
	received  int64 // body bytes the stream's window has taken
	granted   int64 // what probe gave back of the stream's window
	released  bool  // its slot is given back
	wire      int
	head      bool // a HEAD's reply: no body whatever its content-length
	lenSaid   bool // the reply said its content-length: bodyLen
	bodyLen   int64
	got       int64 // body bytes come
}

// abandon ends a stream its client no longer reads: RST_STREAM when the
// server may still send on it, and the credit of what it held given back.
func (cc *clientConn) abandon(st *stream) {
	st.mu.Lock()
	open, unread := !st.wireReset && !(st.remoteEnd && st.localEnd), len(st.buf)
	st.buf, st.ended, st.wireReset = nil, true, true
	if st.err == nil {
		st.err = errAbandoned
	}
	st.mu.Unlock()
	cc.release(st, open, unread)
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
	if cc.retired && cc.active == 0 && cc.err == nil {
		go cc.Close() // (not this goroutine's to wait for the reader)
	}
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

// endedOnWire marks what the wire says of the stream's end.
func (st *stream) endedOnWire(reset, remote, local bool) {
	st.mu.Lock()
	st.wireReset = st.wireReset || reset
	st.remoteEnd = st.remoteEnd || remote
	st.localEnd = st.localEnd || local
	st.mu.Unlock()
}

func (st *stream) isEnded() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ended
}

func (st *stream) signal() {
	select {
	case st.more <- struct{}{}:
	default:
	}
}

// headersIn closes ready once (a check then a close would race).
func (st *stream) headersIn() { st.readyOne.Do(func() { close(st.ready) }) }

// resetStream ends st on the wire with code and forgets it; what it held
// unread goes back to the connection's window.
func (cc *clientConn) resetStream(st *stream, code http2.ErrCode) error {
	st.mu.Lock()
	unread := len(st.buf)
	st.buf, st.wireReset = nil, true
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

// giveBack adds n bytes the connection took and no client will read to
// its credit, and sends the credit when it is due.
func (cc *clientConn) giveBack(n int64) error {
	if n <= 0 {
		return nil
	}
	cc.mu.Lock()
	owed := cc.owe(n)
	cc.mu.Unlock()
	if owed == 0 {
		return nil
	}
	return cc.write(func() error { return cc.fr.WriteWindowUpdate(0, uint32(owed)) })
}
