// Package probes holds the microloads — one small type per kind of request —
// and the load engine that drives them against a target while it measures
// latencies, checks every reply and watches the generator, the target and
// the machine.
package probes

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// Call is one request of a microload and how to check its reply.
type Call struct {
	Op    string // the table row: "GET /sitemap.xml", "tools/list", "initialize"
	Key   string // request key for reply digests: one key, one reply, if the work is invariant
	Req   *h1.Request
	Check func(r *Reply) error // nil: any 2xx is fine
	// Read says the caller reads the reply's decoded body (a scenario
	// extracts a value from it): it is decoded even when the same bytes
	// were checked before.
	Read bool
	// Do, when set, makes the call in place of sending Req on the client's
	// connection (a gRPC watch's span, held by grpc-go's client), and
	// fills the reply as a transport does; Req still names the request.
	Do func(resp *h1.Response) error
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

// MCPSpeaker is a microload that speaks MCP: the lane its Prepare
// negotiated, for the run's report.
type MCPSpeaker interface {
	MCPLane() result.MCPLane
}

// Session is one virtual client's stream of calls.
type Session interface {
	Next(i int) Call
}

// Target is the server under load.
type Target struct {
	URL    *url.URL
	Header []h1.Field    // sent with every request (e.g. Authorization)
	Child  *target.Child // the target's process when probe started it; nil otherwise
	HTTP2  *HTTP2        // load over HTTP/2 (--http2); nil: HTTP/1.1
}

// Addr is the target's host:port.
func (t *Target) Addr() string { return target.Addr(t.URL) }

// UserAgent names probe to the servers it loads, as browsers and crawlers
// name themselves.
const UserAgent = "probe/1 (load test)"

// DefaultHeader is what every request carries unless the target's or the
// call's header names the same field: what real clients send. Accept-Encoding
// lets a server compress as it does for browsers (seed 002's client without
// it measured something else); a target header Accept-Encoding: identity
// turns that off.
var DefaultHeader = []h1.Field{{Name: "User-Agent", Value: UserAgent}, {Name: "Accept-Encoding", Value: "gzip"}}

// Request prepares a request to path on the target: the default header,
// the target's standing header (e.g. Authorization) and the call's, a later
// field replacing an earlier one of the same name.
func (t *Target) Request(method, path string, body []byte, header ...h1.Field) *h1.Request {
	var hs []h1.Field
	for _, group := range [][]h1.Field{DefaultHeader, t.Header, header} {
		for _, f := range group {
			hs = slices.DeleteFunc(hs, func(g h1.Field) bool { return strings.EqualFold(g.Name, f.Name) })
			hs = append(hs, f)
		}
	}
	return h1.NewRequest(method, t.URL.Path+path, body, hs...)
}

// HeaderValue is the value a request to the target carries for a header
// the call does not set: the target's, else the default.
func (t *Target) HeaderValue(name string) string {
	v := ""
	for _, group := range [][]h1.Field{DefaultHeader, t.Header} {
		for _, f := range group {
			if strings.EqualFold(f.Name, name) {
				v = f.Value
			}
		}
	}
	return v
}

// StaticSession repeats calls in turn.
type StaticSession []Call

func (s StaticSession) Next(i int) Call {
	if len(s) == 1 {
		return s[0] // most loads: no division a request
	}
	return s[i%len(s)]
}
