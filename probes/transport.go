package probes

import (
	"crypto/tls"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/h2"
)

// transport is what a Client sends its requests on: an HTTP/1.1
// connection of its own (lib/h1), or a stream of a shared HTTP/2
// connection (lib/h2). Both fill the same Response within the same bounds.
type transport interface {
	Do(req *h1.Request, resp *h1.Response) error
	DoAt(now time.Time, req *h1.Request, resp *h1.Response) error // Do, sent now
	Decode(r io.Reader) ([]byte, error)
	Interrupt()
	Close()
	Counts() (opened, dropped int)
}

// HTTP2 says a target is loaded over HTTP/2: with TLS and ALPN for an
// https URL, h2c with prior knowledge for an http one.
type HTTP2 struct {
	Streams  int  // clients' streams a connection carries at once (default 1)
	Insecure bool // with TLS: accept any certificate (a loopback server's own)

	once sync.Once
	pool *h2.Pool
}

// poolFor is the target's HTTP/2 connections, made once: every client of
// every run shares them by Streams.
func (h *HTTP2) poolFor(t *Target) *h2.Pool {
	h.once.Do(func() {
		h.pool = &h2.Pool{Addr: t.Addr(), Host: t.URL.Host, Streams: h.Streams}
		if t.URL.Scheme == "https" {
			h.pool.TLS = &tls.Config{ServerName: t.URL.Hostname(), InsecureSkipVerify: h.Insecure}
		}
	})
	return h.pool
}

// h1Transport is an HTTP/1.1 connection with its counts.
type h1Transport struct{ h1.Conn }

func (c *h1Transport) Counts() (opened, dropped int) { return c.Opened, c.Dropped }

// h2Transport is a client's stream on the target's HTTP/2 connections;
// their counts are the pool's (HTTP2.counts), not a client's.
type h2Transport struct{ *h2.Conn }

func (h2Transport) Counts() (opened, dropped int) { return 0, 0 }

func (c h2Transport) DoAt(_ time.Time, req *h1.Request, resp *h1.Response) error {
	return c.Do(req, resp)
}

// counts are the connections the target's HTTP/2 pool has dialled and
// lost so far; zero for HTTP/1.1, whose clients count their own.
func (t *Target) h2Counts() (opened, dropped int) {
	if t.HTTP2 == nil {
		return 0, 0
	}
	return t.HTTP2.poolFor(t).Counts()
}

// newTransport is a client's connection to t.
func newTransport(t *Target, timeout time.Duration, maxBody int, budget *h1.Budget) transport {
	if t.HTTP2 != nil {
		return h2Transport{t.HTTP2.poolFor(t).Conn(timeout, maxBody, budget)}
	}
	return &h1Transport{h1.Conn{Addr: t.Addr(), Timeout: timeout, MaxBody: maxBody, Budget: budget}}
}

// Protocol says how t is loaded over HTTP/2: "HTTP/2 (h2c, prior
// knowledge)" or "HTTP/2 (TLS, ALPN h2)", with the streams a connection
// carries; "" for HTTP/1.1 (the reports leave it out).
func (t *Target) Protocol() string {
	h := t.HTTP2
	if h == nil {
		return ""
	}
	how := "h2c, prior knowledge"
	if t.URL.Scheme == "https" {
		how = "TLS, ALPN h2"
	}
	if h.Streams <= 1 {
		return fmt.Sprintf("HTTP/2 (%s), one stream a connection", how)
	}
	return fmt.Sprintf("HTTP/2 (%s), %d streams a connection", how, h.Streams)
}

// CheckHTTP2 sends one GET of the target's URL over HTTP/2: a server
// that does not speak it is one clear error before the run, not a run of
// failed requests. Any status will do.
func CheckHTTP2(t *Target, timeout time.Duration) error {
	if t.HTTP2 == nil {
		return nil
	}
	c := (&h2.Pool{Addr: t.Addr(), Host: t.URL.Host, TLS: t.HTTP2.poolFor(t).TLS}).Conn(timeout, 64<<10, nil)
	defer c.Close()
	var resp h1.Response
	path := t.URL.RequestURI()
	return c.Do(t.Request("GET", path, nil), &resp)
}
