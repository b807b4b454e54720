package h2

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
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

	wmu sync.Mutex // the buffer, the encoder, the framer's writes
	bw  *bufio.Writer
	// writeTimeout bounds a write to the socket: a server that stops
	// reading fails the connection then, instead of holding wmu, and
	// every client waiting on it, for ever.
	writeTimeout time.Duration
	writeBy      time.Time // the write deadline set
	henc         *hpack.Encoder
	hbuf         bytes.Buffer
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
	retired   bool  // its group took another: it closes with its last stream
	err       error // sticky: the connection is done
	recvOwed  int64 // credit of the connection read but not yet given back
	readerEnd chan struct{}
	frames    atomic.Uint64 // frames read: a request that timed out with none is on a stalled connection
	settled   chan struct{} // closed at the server's first SETTINGS
}

// dialConn opens an HTTP/2 connection: TLS with ALPN h2, or h2c with prior
// knowledge, then the preface and probe's settings.
func dialConn(ctx context.Context, addr string, cfg *tls.Config, writeTimeout time.Duration) (*clientConn, error) {
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
	cc := &clientConn{nc: nc, bw: bufio.NewWriterSize(nc, 32<<10), writeTimeout: writeTimeout, streams: map[uint32]*stream{}, nextID: 1, maxActive: 100,
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

// retire closes the connection when its last stream ends: now, when none
// is open or it failed.
func (cc *clientConn) retire() {
	cc.mu.Lock()
	cc.retired = true
	now := cc.err != nil || cc.active == 0
	cc.broadcast() // streams waiting for a slot go elsewhere
	cc.mu.Unlock()
	if now {
		cc.Close()
	}
}

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
	cc.armWrite() // frames may flush a full buffer itself (a large body's DATA)
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
	if cc.bw.Buffered() == 0 {
		return nil
	}
	cc.armWrite()
	return cc.bw.Flush()
}

// armWrite moves the socket's write deadline writeTimeout on, when a
// quarter of it has gone since it was set (not a timer's reset a write);
// wmu held.
func (cc *clientConn) armWrite() {
	now := time.Now()
	if cc.writeBy.Sub(now) > cc.writeTimeout*3/4 {
		return
	}
	cc.writeBy = now.Add(cc.writeTimeout)
	cc.nc.SetWriteDeadline(cc.writeBy)
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
