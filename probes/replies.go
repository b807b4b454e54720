package probes

import (
	"sort"
	"strings"
	"sync"

	"github.com/probehq/probe/lib/h1"
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

// hasInput says whether a request carries input beyond its path: a query
// or a body.
func hasInput(r *h1.Request) bool {
	return strings.Contains(r.Path, "?") || len(r.Body) > 0
}

// digestsOf turns the merged per-key replies into the run's digests, most
// frequent reply first, with up to samplesPerKey bodies each.
func digestsOf(keys map[string]*keyReplies, kept *samples) []Digest {
	out := make([]Digest, 0, len(keys))
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
		d := Digest{Key: key, Op: kr.op, Requests: n, Distinct: len(sums), Input: kr.input, BodyBytes: kr.bodyBytes, Request: kr.request}
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
