// Package probes holds the microloads — one small type per kind of request —
// and the load engine that drives them against a target while it measures
// latencies, checks every reply and watches the generator, the target and
// the machine.
package probes

import (
	"context"
	"net/url"

	"probe/probes/h1"
)

// Call is one request of a microload and how to check its reply.
type Call struct {
	Op    string // the table row: "GET /sitemap.xml", "tools/list", "initialize"
	Key   string // request key for reply digests: one key, one reply, if the work is invariant
	Req   *h1.Request
	Check func(r *Reply) error // nil: any 2xx is fine
}

// Reply is a response as a check sees it: the body decoded.
type Reply struct {
	Status int
	Header func(name string) string
	Body   []byte
}

// Microload is one kind of request against a target.
type Microload interface {
	Name() string
	// Prepare learns what the load needs from the target (pages, feeds,
	// words), once, before any client starts. Its calls are not measured.
	Prepare(ctx context.Context, t *Target, c *Client) error
	// NewSession sets up virtual client id. Calls it makes through c are
	// measured as operations of their own (seed 000's "connect" row).
	NewSession(ctx context.Context, c *Client, id int) (Session, error)
}

// Session is one virtual client's stream of calls.
type Session interface {
	Next(i int) Call
}

// Target is the server under load.
type Target struct {
	URL    *url.URL
	Header []h1.Field // sent with every request (e.g. Authorization)
	Child  *Child     // the target's process when probe started it; nil otherwise
}

// Addr is the target's host:port.
func (t *Target) Addr() string {
	if t.URL.Port() != "" {
		return t.URL.Host
	}
	if t.URL.Scheme == "https" {
		return t.URL.Host + ":443"
	}
	return t.URL.Host + ":80"
}

// Request prepares a request to path on the target with its standing headers.
func (t *Target) Request(method, path string, body []byte, header ...h1.Field) *h1.Request {
	hs := append(append([]h1.Field(nil), t.Header...), header...)
	return h1.NewRequest(method, t.URL.Path+path, body, hs...)
}

// staticSession repeats calls in turn.
type staticSession []Call

func (s staticSession) Next(i int) Call { return s[i%len(s)] }
