package probes

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/result"
)

// Replies are kept, a few per request key, so that the analyzers can
// compare them part by part: a reply that differs only in a nonce or an
// order is not a reply that differs in its content.

const (
	maxSampleBody  = 128 << 10 // a longer reply is kept cut to this
	sampleBudget   = 16 << 20  // all the bodies kept by one run
	samplesPerKey  = 3         // distinct replies kept per key
	maxRequestText = 2 << 10
)

// samples are decoded reply bodies by digest, shared by a run's clients and
// bounded in all.
type samples struct {
	mu     sync.Mutex
	bodies map[uint64][]byte
	size   int
}

func newSamples() *samples { return &samples{bodies: map[uint64][]byte{}} }

// keep stores a copy of body under its digest while the budget lasts.
func (s *samples) keep(sum uint64, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.bodies[sum]; ok || s.size >= sampleBudget {
		return
	}
	b := append([]byte(nil), body[:min(len(body), maxSampleBody)]...)
	s.bodies[sum] = b
	s.size += len(b)
}

func (s *samples) get(sum uint64) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bodies[sum]
	return b, ok
}

// requestText is a request as an echo in its reply could quote it: the
// method, the path with its query, and the body.
func requestText(r *h1.Request) string {
	t := r.Method + " " + r.Path
	if len(r.Body) > 0 {
		t += " " + string(r.Body)
	}
	if len(t) > maxRequestText {
		t = t[:maxRequestText]
	}
	return t
}

// notInputs are the header fields that frame a request or name the
// client, the same for every client of a kind: not an input a server keys
// its work on. Every other field probe sends is (DESIGN.md, the
// experiment: inputs).
// Accept and Accept-Encoding negotiate the reply's format and encoding,
// not its content; MCP's session id and protocol version are its
// transport's, and its Mcp-Method and Mcp-Name routing fields repeat the
// body's method and tool name (a server refuses them unequal): another
// key varies them with the body.
var notInputs = map[string]bool{"host": true, "content-type": true, "content-length": true, "transfer-encoding": true,
	"connection": true, "te": true, "user-agent": true, "accept": true, "accept-encoding": true, "mcp-session-id": true,
	"mcp-protocol-version": true, "mcp-method": true, "mcp-name": true}

// IsInputHeader says whether a header field is an input of the request:
// one a server may key its work on (Accept-Language, Cookie,
// Authorization, an API key, gRPC metadata), not framing (Content-Type,
// Te, gRPC's own grpc-* fields) nor the client's name.
func IsInputHeader(name string) bool {
	n := strings.ToLower(name)
	return !notInputs[n] && !strings.HasPrefix(n, "grpc-") && !strings.HasPrefix(n, ":")
}

// InputHeaders are the names of the request's input header fields, in
// the order sent, each once.
func InputHeaders(r *h1.Request) []string {
	var out []string
	for _, f := range r.Header {
		if IsInputHeader(f.Name) && !slices.ContainsFunc(out, func(n string) bool { return strings.EqualFold(n, f.Name) }) {
			out = append(out, f.Name)
		}
	}
	return out
}

// isGRPCRequest says whether a request is a gRPC call.
func isGRPCRequest(r *h1.Request) bool {
	return strings.HasPrefix(strings.ToLower(r.HeaderValue("Content-Type")), "application/grpc")
}

// noteHeaders marks the input headers whose value in r differs from the
// key's first request's: inputs the run varied.
func (k *keyReplies) noteHeaders(r *h1.Request) {
	if r == k.first || k.first == nil || len(k.varied) == len(k.headers) {
		return
	}
	for _, n := range k.headers {
		if !slices.Contains(k.varied, n) && r.HeaderValue(n) != k.first.HeaderValue(n) {
			k.varied = append(k.varied, n)
		}
	}
}

// hasInput says whether a request carries input beyond its path: a query
// or a body.
func hasInput(r *h1.Request) bool {
	return strings.Contains(r.Path, "?") || len(r.Body) > 0
}

// digestsOf turns the merged per-key replies into the run's digests, most
// frequent reply first, with up to samplesPerKey bodies each.
func digestsOf(keys map[string]*keyReplies, kept *samples) []result.Digest {
	out := make([]result.Digest, 0, len(keys))
	for key, kr := range keys {
		sums := make([]uint64, 0, len(kr.counts))
		var n int64
		for sum, c := range kr.counts {
			sums = append(sums, sum)
			n += c
		}
		sort.Slice(sums, func(i, j int) bool {
			a, b := kr.counts[sums[i]], kr.counts[sums[j]]
			return a > b || a == b && sums[i] < sums[j]
		})
		d := result.Digest{Key: key, Op: kr.op, Requests: n, Distinct: len(sums), Input: kr.input, BodyBytes: kr.bodyBytes, Request: kr.request,
			Headers: kr.headers, HeadersVaried: kr.varied, GRPC: kr.grpc}
		if len(sums) > 0 {
			d.Top = sums[0]
		}
		for _, sum := range sums {
			if len(d.Bodies) == samplesPerKey {
				break
			}
			if b, ok := kept.get(sum); ok {
				d.Bodies = append(d.Bodies, b)
			}
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
