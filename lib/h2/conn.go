// Package h2 is probe's HTTP/2 client, on x/net/http2's Framer and hpack
// (wire.go): a run decides how many connections there are and how many
// clients' streams each carries (--streams), and the frames of a burst of
// streams leave in one write, where Go's own client writes and flushes
// each request's HEADERS alone. Requests, replies and their bounds are
// lib/h1's, so the engine above sees one kind of reply.
package h2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/probehq/probe/lib/h1"
)

// Pool is the HTTP/2 connections to one server: each carries the streams
// of Streams clients at once. With TLS, h2 is negotiated by ALPN; without,
// h2c with prior knowledge (RFC 9113 §3.3), as a loopback server speaks it.
type Pool struct {
	Addr    string      // host:port
	Host    string      // the :authority (default Addr)
	TLS     *tls.Config // nil: h2c
	Streams int         // clients a connection carries (default 1)

	mu     sync.Mutex
	groups []*group
}

// group is one connection and the clients whose streams it carries.
type group struct {
	pool            *Pool
	mu              sync.Mutex
	cc              *clientConn
	dialing         chan struct{} // closed when the dial under way ends
	refs            int
	opened, dropped int
}

func (p *Pool) scheme() string {
	if p.TLS != nil {
		return "https"
	}
	return "http"
}

// Conn is one client of the pool. It takes its share of a connection on
// its first request: of the first one carrying fewer than Streams
// clients, or of a new one. A client that lets go (Close) frees its place.
func (p *Pool) Conn(timeout time.Duration, maxBody int, budget *h1.Budget) *Conn {
	return &Conn{Timeout: timeout, pool: p, limits: h1.Conn{MaxBody: maxBody, Budget: budget}}
}

// join gives c a place on a connection.
func (p *Pool) join(c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	streams := max(1, p.Streams)
	for _, g := range p.groups {
		g.mu.Lock()
		if g.refs < streams {
			g.refs++
			g.mu.Unlock()
			c.g = g
			return
		}
		g.mu.Unlock()
	}
	g := &group{pool: p, refs: 1}
	p.groups = append(p.groups, g)
	c.g = g
}

// Counts are the connections the pool dialled and those the server
// dropped, over its life (a run takes the difference across it).
func (p *Pool) Counts() (opened, dropped int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.groups {
		g.mu.Lock()
		opened, dropped = opened+g.opened, dropped+g.dropped
		g.mu.Unlock()
	}
	return opened, dropped
}

// Conn is one client's stream at a time on a shared HTTP/2 connection.
type Conn struct {
	Timeout time.Duration
	pool    *Pool
	g       *group  // the connection it shares, once joined
	limits  h1.Conn // never dialled: the bounds of a reply and of its decoding
	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped bool // Interrupt: every request fails until Close
	joined  bool // holds a share of the group's connection (until Close)
}

// clientConn is the group's connection, dialled when there is none or the
// last one failed; fresh says it was dialled now. One client dials, the
// others wait for it within their own deadlines (not behind g.mu).
func (g *group) clientConn(ctx context.Context, timeout time.Duration) (cc *clientConn, fresh bool, err error) {
	for {
		g.mu.Lock()
		if g.cc != nil && g.cc.Err() == nil {
			cc := g.cc
			g.mu.Unlock()
			return cc, false, nil
		}
		if g.cc != nil {
			g.drop()
		}
		if wait := g.dialing; wait != nil {
			g.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
		}
		done := make(chan struct{})
		g.dialing = done
		g.mu.Unlock()
		cc, err := g.dial(ctx, timeout)
		g.mu.Lock()
		g.dialing = nil
		close(done)
		if err == nil {
			g.cc, g.opened = cc, g.opened+1
		}
		g.mu.Unlock()
		return cc, err == nil, err
	}
}

func (g *group) dial(ctx context.Context, timeout time.Duration) (*clientConn, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return dialConn(dctx, g.pool.Addr, g.pool.TLS, timeout)
}

// drop lets go of the group's connection, which failed or was told to go
// away: a GOAWAY's streams the server took are still answered, so such a
// connection closes with its last stream, not now; g.mu held.
func (g *group) drop() {
	g.dropped++
	g.cc.retire()
	g.cc = nil
}

// stalled drops cc when it is the group's: it sent nothing for a whole
// request's timeout. Its streams in flight may still end on it.
func (g *group) stalled(cc *clientConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cc == cc {
		g.drop()
	}
}

// broken drops cc when it is the group's and has failed.
func (g *group) broken(cc *clientConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cc == cc && cc.Err() != nil {
		g.drop()
	}
}

// Do sends req as a stream and reads the reply into resp, within the
// bounds. A request on a reused connection that the server had closed is
// sent again once on a new one when it is idempotent, as h1 does.
func (c *Conn) Do(req *h1.Request, resp *h1.Response) error {
	c.limits.Release(resp)
	// A request that fails before Fill keeps no Done or Cut of the reply
	// before it (its caller would time the failure to it).
	resp.Done, resp.Cut = time.Time{}, false
	host := c.pool.Host
	if host == "" {
		host = c.pool.Addr
	}
	if err := req.Check(host); err != nil {
		return err // nothing sent
	}
	ctx, cancel, err := c.begin()
	if err != nil {
		return err
	}
	defer c.end(cancel)
	fresh, err := c.roundTrip(ctx, host, req, resp)
	if err != nil && !fresh && errors.Is(err, h1.ErrClosed) && idempotent(req.Method) && ctx.Err() == nil {
		_, err = c.roundTrip(ctx, host, req, resp)
	}
	return err
}

func (c *Conn) begin() (context.Context, context.CancelFunc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, nil, fmt.Errorf("%w: the run is ending", h1.ErrClosed)
	}
	if !c.joined {
		c.pool.join(c)
		c.joined = true
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if c.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	c.cancel = cancel
	return ctx, cancel, nil
}

func (c *Conn) end(cancel context.CancelFunc) {
	c.mu.Lock()
	c.cancel = nil
	c.mu.Unlock()
	cancel()
}

func (c *Conn) roundTrip(ctx context.Context, host string, req *h1.Request, resp *h1.Response) (fresh bool, err error) {
	cc, fresh, err := c.g.clientConn(ctx, c.Timeout)
	if err != nil {
		return true, err
	}
	framesBefore := cc.frames.Load()
	defer func() {
		// A request that timed out while the server sent nothing at all on
		// the connection (a silent server, an endless header block the
		// Framer is still reading, no stream slot ever freed): the next
		// ones go to a new connection, as h1 dials again after a timeout.
		if err != nil && ctx.Err() != nil && cc.frames.Load() == framesBefore {
			c.g.stalled(cc)
		}
	}()
	var cut context.CancelFunc
	if req.Watch != nil {
		// The stream's own context: cancelled StreamGrace after the body
		// is complete, it ends a stream the server keeps open.
		ctx, cut = context.WithCancel(ctx)
		defer cut()
	}
	st, err := cc.RoundTrip(ctx, host, c.g.pool.scheme(), req)
	if errors.Is(err, errRetired) {
		// Refused before anything was sent (the connection was left
		// meanwhile): the group's connection now takes it, whatever the
		// method.
		if cc, fresh, err = c.g.clientConn(ctx, c.Timeout); err != nil {
			return true, err
		}
		framesBefore = cc.frames.Load()
		st, err = cc.RoundTrip(ctx, host, c.g.pool.scheme(), req)
	}
	if err != nil {
		return fresh, c.failed(ctx, cc, err)
	}
	res := &body{cc: cc, st: st, ctx: ctx}
	var body []byte
	var done time.Time
	if req.Watch != nil {
		var grace *time.Timer
		body, done, err = c.limits.ReadBodyUntil(res, req.Watch(), func() { grace = time.AfterFunc(h1.StreamGrace, cut) })
		if grace != nil {
			grace.Stop()
		}
	} else {
		body, err = c.limits.ReadBody(res)
	}
	res.Close()
	if err != nil {
		var tl *h1.TooLargeError
		var be *h1.BudgetError
		if errors.As(err, &tl) || errors.As(err, &be) {
			return fresh, err
		}
		return fresh, c.failed(ctx, cc, err)
	}
	resp.Reset(st.status, body, st.wire)
	// The trailer's fields first (known once the body is read): a
	// grpc-status there is the call's, whatever the headers said before.
	for _, f := range st.trailer {
		resp.AddField(f.Name, f.Value)
	}
	for _, f := range st.header {
		resp.AddField(f.Name, f.Value)
	}
	resp.Done = done
	resp.Cut = !done.IsZero() && ctx.Err() != nil
	return fresh, nil
}

// failed is a request's error: the request's own timeout as itself (a
// timeout), a connection that went away as h1.ErrClosed.
func (c *Conn) failed(ctx context.Context, cc *clientConn, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %v", ctx.Err(), err)
	}
	if cc.Err() != nil {
		c.g.broken(cc)
		return fmt.Errorf("%w: %v", h1.ErrClosed, err)
	}
	return err
}

// Decode reads r (a decompressor of the last reply) to its end within the
// same bounds as a reply.
func (c *Conn) Decode(r io.Reader) ([]byte, error) { return c.limits.Decode(r) }

// Interrupt makes a request in flight return now, and later ones fail
// until Close (the run is ending).
func (c *Conn) Interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.cancel != nil {
		c.cancel()
	}
}

// Close lets go of the client's share of the connection, which closes
// with its last client; a later Do takes a share again (and dials when
// the connection is gone), as an h1.Conn dials again.
func (c *Conn) Close() {
	c.mu.Lock()
	joined := c.joined
	c.joined, c.stopped = false, false
	c.mu.Unlock()
	if !joined {
		return
	}
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refs--
	if g.refs == 0 && g.cc != nil {
		g.cc.Close()
		g.cc = nil
	}
}

func idempotent(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}
