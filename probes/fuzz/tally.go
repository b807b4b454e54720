package fuzz

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probehq/probe/result"

	"github.com/probehq/probe/probes"
)

// maxKinds bounds the kinds of reply the search keeps an input for: a
// server that words every reply anew makes no pool without end.
const maxKinds = 4096

// tally is what the search has seen: replies by status and reason, the
// crashes filed in the order found, and the inputs worth mutating (those
// that reached a new kind of reply).
type tally struct {
	inputs  atomic.Int64
	hostile atomic.Int64 // inputs answered with a 4xx while the target lived
	unsent  atomic.Int64 // inputs the wire cannot carry, not sent
	refused atomic.Int64 // inputs a whole reply refused (Options.Refused) while the target lived

	mu       sync.Mutex
	statuses map[int]int64
	failures *probes.Reasons // folded, at most result.MaxReasons
	groups   map[string]*group
	order    []string
	kinds    map[string]bool      // outcome signatures seen
	pool     [][]result.FuzzInput // per template: inputs worth mutating
}

// group is one crash as the search saw it, before confirming and shrinking.
type group struct {
	first    Outcome
	suspects []result.FuzzInput
	found    time.Duration
	seen     int
}

func newTally(templates int) *tally {
	return &tally{statuses: map[int]int64{}, failures: probes.NewReasons(nil), groups: map[string]*group{},
		kinds: map[string]bool{}, pool: make([][]result.FuzzInput, templates)}
}

// file adds a crash under key, or counts it again.
func (t *tally) file(key string, out Outcome, suspects []result.FuzzInput, found time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[key]
	if g == nil {
		g = &group{first: out, suspects: suspects, found: found}
		t.groups[key] = g
		t.order = append(t.order, key)
	}
	g.seen++
}

// note counts a reply and keeps the input when its kind of reply is new.
func (t *tally) note(in result.FuzzInput, out Outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case out.Class != "":
	case out.Status > 0:
		t.statuses[out.Status]++
		if out.Status >= 400 && out.Status < 500 {
			t.hostile.Add(1)
		}
		if out.Refused {
			t.refused.Add(1)
		}
		if out.Reason != "" {
			t.failures.Add("", fmt.Sprintf("%d %s", out.Status, normalise(probes.FoldReason(out.Reason))), 1)
		}
	default:
		t.failures.Add("", out.Reason, 1)
	}
	// A reply's kind: its reason with the request's own ids and numbers out.
	sig := fmt.Sprintf("%d|%d|%s|%s", in.Template, out.Status, out.Class, normalise(probes.FoldReason(out.Reason)))
	if !t.kinds[sig] && len(t.kinds) < maxKinds {
		t.kinds[sig] = true
		t.pool[in.Template] = append(t.pool[in.Template], in)
	}
}

// pick draws, one time in two, a kept input of template ti to mutate;
// nil otherwise.
func (t *tally) pick(ti int, r *rand.Rand) *result.FuzzInput {
	t.mu.Lock()
	defer t.mu.Unlock()
	pool := t.pool[ti]
	if len(pool) == 0 || r.IntN(2) != 0 {
		return nil
	}
	in := pool[r.IntN(len(pool))]
	return &in
}

// distinct is how many crashes were filed.
func (t *tally) distinct() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.order)
}

// crashGroups are the filed crashes in the order found.
func (t *tally) crashGroups() []*group {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*group, len(t.order))
	for i, k := range t.order {
		out[i] = t.groups[k]
	}
	return out
}
