package fuzz

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/probehq/probe/result"

	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/probehq/probe/lib/crash"
)

// Shrinking: each crash found is replayed alone (or, if alone it does not
// show, as concurrent copies) to confirm it, then made smaller while it
// still crashes the same way: integers by bisection (a recursion depth has
// a threshold), text by bisecting its numbers and its deepest bracket
// nesting, then by delta debugging over tokens, with candidates that are
// not valid Jsonnet or JSON skipped without a request.

// maxSuspects bounds the in-flight inputs replayed to find a death's cause.
const maxSuspects = 8

// trialer replays inputs one at a time on a target it restarts as needed.
type trialer struct {
	f          *fuzzer
	ctx        context.Context
	deadline   time.Time
	hc         *http.Client
	concurrent bool
	want       Outcome
	cache      map[string]Outcome
	trials     int
	last       Outcome // the outcome of the last input that crashed the same way
}

func (t *trialer) expired() bool { return t.ctx.Err() != nil || time.Now().After(t.deadline) }

// crashes reports whether in crashes the target the way t.want did.
func (t *trialer) crashes(in result.FuzzInput) bool {
	if t.expired() {
		return false
	}
	key := fmt.Sprintf("%v %q", t.concurrent, t.f.request(in))
	out, ok := t.cache[key]
	if !ok {
		t.trials++
		if t.concurrent {
			out = t.f.tryConcurrent(t.ctx, in, min(3*time.Second, time.Until(t.deadline)))
		} else {
			var err error
			if out, err = t.f.try(t.ctx, t.hc, in, false); err != nil {
				return false
			}
		}
		t.cache[key] = out
	}
	if sameCrash(out, t.want) {
		t.last = out
		return true
	}
	return false
}

// sameCrash: the same class; for panics the same message, and for stack
// overflows the same recursion, so that shrinking cannot drift from one
// bug to another (an evaluator's recursion to its parser's).
func sameCrash(a, b Outcome) bool {
	if a.Class == "" || a.Class != b.Class {
		return false
	}
	switch a.Class {
	case crash.Panic:
		return panicMessage(a.Evidence) == panicMessage(b.Evidence)
	case crash.StackOverflow:
		ra, rb := crash.Recursion(a.Stderr), crash.Recursion(b.Stderr)
		return ra == "" || rb == "" || ra == rb
	}
	return true
}

// panicMessage is a panic's value without numbers or the client address.
func panicMessage(ev string) string {
	if i := strings.Index(ev, panicMarker); i >= 0 {
		rest := ev[i+len(panicMarker):]
		if _, msg, ok := strings.Cut(rest, ": "); ok {
			ev = msg
		}
	}
	return normalise(ev)
}

// tryConcurrent sends copies of in from all clients for up to d or until
// the target crashes.
func (f *fuzzer) tryConcurrent(ctx context.Context, in result.FuzzInput, d time.Duration) Outcome {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var found Outcome
	var wg sync.WaitGroup
	for range max(f.o.Concurrency, 4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := newHTTPClient(1)
			for ctx.Err() == nil {
				out, err := f.try(ctx, hc, in, false)
				if err == nil && out.Class != "" {
					mu.Lock()
					if found.Class == "" {
						found = out
					}
					mu.Unlock()
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	// Handlers of cancelled requests may still run on the server: the next
	// trial gets a fresh process, or their race would count as its crash.
	f.sup.restartFresh()
	return found
}

// confirmAndShrink works through the crashes in the order found, sharing
// the shrink time among them.
func (f *fuzzer) confirmAndShrink(ctx context.Context) []*result.FuzzCrash {
	order := f.seen.crashGroups()
	// Fatal deaths first, out-of-memory last: it is the slowest to
	// reproduce (memory fills to the cap on every trial).
	rank := func(g *group) int {
		switch g.first.Class {
		case crash.StackOverflow, crash.ConcurrentMapWrite, crash.Deadlock:
			return 0
		case crash.OutOfMemory:
			return 2
		}
		return 1
	}
	sort.SliceStable(order, func(i, j int) bool { return rank(order[i]) < rank(order[j]) })
	end := time.Now().Add(f.o.ShrinkTime)
	f.sup.restartFresh() // the search's last requests may still be running in it
	var crashes []*result.FuzzCrash
	for i, g := range order {
		share := time.Until(end) / time.Duration(len(order)-i)
		c := f.shrinkGroup(ctx, g, time.Now().Add(share))
		crashes = mergeCrash(crashes, c)
	}
	return crashes
}

func (f *fuzzer) shrinkGroup(ctx context.Context, g *group, deadline time.Time) *result.FuzzCrash {
	c := f.crashOf(g, g.suspects[0])
	t := &trialer{f: f, ctx: ctx, deadline: deadline, hc: newHTTPClient(1), want: g.first, cache: map[string]Outcome{}}
	suspects := g.suspects
	if len(suspects) > maxSuspects {
		suspects = suspects[:maxSuspects]
	}
	var in *result.FuzzInput
	for _, s := range suspects {
		if t.crashes(s) {
			in = &s
			break
		}
	}
	if in == nil && !t.expired() {
		t.concurrent = true
		for _, s := range suspects {
			if t.crashes(s) {
				in = &s
				break
			}
		}
	}
	if in == nil {
		c.Trials = t.trials
		c.Shrink = "not reproduced by replaying the inputs in flight; kept as the search saw it"
		if t.expired() {
			c.Shrink = "not confirmed before the shrink time ran out; kept as the search saw it"
		}
		return c
	}
	c = f.crashOf(g, *in)
	c.Confirmed, c.Concurrent = true, t.concurrent
	shrunk, hole := f.shrinkInput(t, *in)
	c.Input, c.Trials = shrunk, t.trials
	setRequest(c, f.request(shrunk))
	what := "of values"
	if hole >= 0 {
		c.Hole = f.o.Templates[in.Template].HoleName(hole)
		what = "of " + c.Hole
		if len(f.o.Templates[in.Template].holes) > 1 {
			what += " (the other holes plain)"
		}
	}
	if t.last.Class != "" {
		c.Evidence, c.Frames, c.Stderr = t.last.Evidence, t.last.Frames, t.last.Stderr
		c.Signature = f.signature(t.last, shrunk)
	}
	before, after := inputSize(*in), inputSize(shrunk)
	if hole >= 0 {
		before, after = len(in.Values[hole]), len(shrunk.Values[hole])
	}
	switch {
	case t.expired():
		c.Shrink = fmt.Sprintf("shrunk from %d to %d bytes %s in %d trials; the shrink time ran out before a minimum", before, after,
			what, t.trials)
	default:
		c.Shrink = fmt.Sprintf("shrunk from %d to %d bytes %s in %d trials, until bisection and delta debugging found nothing "+
			"smaller that crashes the same way", before, after, what, t.trials)
	}
	return c
}

// smaller: fewer bytes, then (numbers of one length) the lesser.
func smaller(a, b result.FuzzInput) bool {
	if sa, sb := inputSize(a), inputSize(b); sa != sb {
		return sa < sb
	}
	return strings.Join(a.Values, "\x00") < strings.Join(b.Values, "\x00")
}

func inputSize(in result.FuzzInput) int {
	n := 0
	for _, v := range in.Values {
		n += len(v)
	}
	return n
}

func (f *fuzzer) crashOf(g *group, in result.FuzzInput) *result.FuzzCrash {
	c := &result.FuzzCrash{Class: g.first.Class, Evidence: g.first.Evidence, Frames: g.first.Frames, Stderr: g.first.Stderr,
		Input: in, Original: in, Endpoint: endpointOf(f.o.Templates[in.Template]), FoundAfter: g.found, Seen: g.seen,
		Signature: f.signature(g.first, in)}
	setRequest(c, f.request(in))
	return c
}

func setRequest(c *result.FuzzCrash, r result.FuzzRequest) {
	c.Method, c.Path, c.Header, c.Body = r.Method, r.Path, r.Header, r.Body
}

// unshrunk lists what the search found when there was no time to shrink.
func (f *fuzzer) unshrunk() []*result.FuzzCrash {
	var out []*result.FuzzCrash
	for _, g := range f.seen.crashGroups() {
		c := f.crashOf(g, g.suspects[0])
		c.Shrink = "not shrunk: the run ended first"
		out = append(out, c)
	}
	return out
}

// mergeCrash adds c unless a crash with the same signature (class and
// frames) is there already; then the smaller input stays and the other's
// request is kept in Also.
func mergeCrash(cs []*result.FuzzCrash, c *result.FuzzCrash) []*result.FuzzCrash {
	for i, o := range cs {
		sameInput := fmt.Sprintf("%q", o.Request()) == fmt.Sprintf("%q", c.Request())
		if o.Class == c.Class && (c.Signature != "" && c.Signature == o.Signature || sameInput) {
			keep, drop := o, c
			if c.Confirmed && (!o.Confirmed || smaller(c.Input, o.Input)) {
				keep, drop = c, o
			}
			keep.Seen = o.Seen + c.Seen
			if !sameInput {
				keep.Also = append(append(keep.Also, drop.Also...), drop.Input)
			}
			cs[i] = keep
			return cs
		}
	}
	return append(cs, c)
}

// shrinkInput makes the input smaller while t still sees the same crash.
// First it looks for the one hole that crashes alone, the others plain;
// then it shrinks that hole's value only, and says which hole it was
// (-1 when the crash needs several holes' values: each is shrunk in turn).
func (f *fuzzer) shrinkInput(t *trialer, in result.FuzzInput) (result.FuzzInput, int) {
	tmpl := f.o.Templates[in.Template]
	valid := func(in result.FuzzInput) bool { return sendable(tmpl.Request(in.Values)) == "" }
	if len(tmpl.holes) > 1 {
		for i := range tmpl.holes {
			alone := plainInput(in.Template, tmpl)
			alone.Values[i] = in.Values[i]
			if valid(alone) && t.crashes(alone) {
				return f.shrinkHole(t, alone, i, valid), i
			}
		}
	}
	for i := range tmpl.holes {
		in = f.shrinkHole(t, in, i, valid)
	}
	if len(tmpl.holes) == 1 {
		return in, 0
	}
	return in, -1
}

// shrinkHole makes hole i's value smaller, the other values as they are.
func (f *fuzzer) shrinkHole(t *trialer, in result.FuzzInput, i int, validInput func(result.FuzzInput) bool) result.FuzzInput {
	h := f.o.Templates[in.Template].holes[i]
	with := func(v string) result.FuzzInput {
		out := result.FuzzInput{Template: in.Template, Values: append([]string{}, in.Values...)}
		out.Values[i] = v
		return out
	}
	valid := func(v string) bool { return Sendable(h.place, v) }
	switch h.kind {
	case Jsonnet:
		valid = func(v string) bool { return Parses(v) }
	case JSON:
		valid = func(v string) bool { return json.Valid([]byte(v)) }
	}
	crashes := func(v string) bool { return valid(v) && validInput(with(v)) && t.crashes(with(v)) }
	v := in.Values[i]
	switch h.kind {
	case Int, Uint:
		v = bisectInt(v, crashes)
	case Method:
		v = shrinkPrefix(v, crashes)
		v = ddminTokens(v, crashes, t.expired)
	default:
		if h.kind == Str {
			v = shrinkPrefix(v, crashes)
		}
		v = shrinkNesting(v, crashes)
		v = shrinkNumbers(v, crashes)
		v = ddminTokens(v, crashes, t.expired)
		v = shrinkNumbers(v, crashes)
	}
	return with(v)
}
