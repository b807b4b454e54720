package fuzz

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/crash"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// A leak is a crash class the process lives through: goroutines a request
// left blocked forever, which Go 1.27's goroutineleak profile finds. After
// the search, on a fresh target, probe sends inputs one at a time — each
// template's plain input, its extremes, then the search's last inputs —
// and reads the leak profile after each: a leaked stack that was not there
// before is that input's leak, shown by the input alone.

// Bounds of the leak hunt: its time, the inputs tried, the search's last
// inputs kept as candidates, the frames a leak names.
const (
	leakHuntTime  = 10 * time.Second
	maxLeakTrials = 64
	recentInputs  = 32
	leakFrames    = 8
)

// recent keeps the search's last inputs that got a reply.
type recent struct {
	mu  sync.Mutex
	ins []result.FuzzInput
}

func (r *recent) add(in result.FuzzInput) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ins) == recentInputs {
		r.ins = r.ins[1:]
	}
	r.ins = append(r.ins, in)
}

func (r *recent) all() []result.FuzzInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ins)
}

// leakCandidates are the inputs tried for a leak, each once, in order.
func (f *fuzzer) leakCandidates() []result.FuzzInput {
	var out []result.FuzzInput
	seen := map[string]bool{}
	add := func(in result.FuzzInput) {
		key := fmt.Sprintf("%q", f.request(in))
		if !seen[key] && len(out) < maxLeakTrials && sendable(f.request(in)) == "" {
			seen[key] = true
			out = append(out, in)
		}
	}
	for ti, t := range f.o.Templates {
		add(plainInput(ti, t))
	}
	for _, in := range f.extremes {
		add(in)
	}
	ins := f.recent.all()
	for i := len(ins) - 1; i >= 0; i-- {
		add(ins[i])
	}
	return out
}

// huntLeaks tries the candidates until deadline and returns a crash per
// leaked stack, and a note when the hunt could not be made or found
// nothing the search's end showed.
func (f *fuzzer) huntLeaks(ctx context.Context, deadline time.Time, atEnd int64) ([]*result.FuzzCrash, string) {
	f.sup.restartFresh()
	child, _, _, err := f.sup.ensure(ctx)
	if err != nil {
		return nil, "leaks were not looked for: the target would not start again"
	}
	o := target.ProfileOptions{PprofURL: leakURL(child.URL)}
	before, err := target.Leaked(ctx, o)
	if err != nil {
		return nil, "leaks were not looked for: the target serves no leak profile (" + textline.Of(err.Error(), 200) +
			"; Go 1.27 serves /debug/pprof/goroutineleak)"
	}
	known := leakedStacks(before)
	hc := newHTTPClient(1)
	var crashes []*result.FuzzCrash
	tried := 0
	hunt, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for _, in := range f.leakCandidates() {
		if hunt.Err() != nil {
			break
		}
		out, err := f.try(hunt, hc, in, false)
		if err != nil || out.Class != "" {
			continue // a death is the search's to report; the next input gets a fresh target
		}
		tried++
		if child, _, _, err = f.sup.ensure(hunt); err != nil {
			break
		}
		now, err := target.Leaked(hunt, target.ProfileOptions{PprofURL: leakURL(child.URL)})
		if err != nil {
			continue
		}
		for key, st := range leakedStacks(now) {
			if st.count > known[key].count {
				crashes = append(crashes, f.leakCrash(in, st, st.count-known[key].count, tried))
			}
		}
		known = leakedStacks(now)
	}
	if len(crashes) == 0 && atEnd > 0 {
		return nil, fmt.Sprintf("%d goroutines were blocked forever at the search's end, but none of %d inputs tried alone "+
			"left one: a leak of inputs in flight together, or of one the hunt did not try", atEnd, tried)
	}
	return crashes, ""
}

// leakURL is a started target's /debug/pprof/.
func leakURL(base string) *url.URL {
	u, err := url.Parse(strings.TrimSuffix(base, "/") + "/debug/pprof/")
	if err != nil {
		return &url.URL{}
	}
	return u
}

// leakedStack is the goroutines of one stack in a leak profile: its
// frames below the runtime's wait, and where they wait.
type leakedStack struct {
	frames []string
	wait   string
	count  int64
}

// leakedStacks groups a leak profile's goroutines by their stack.
func leakedStacks(p *profile.Profile) map[string]leakedStack {
	out := map[string]leakedStack{}
	if p == nil || len(p.SampleType) == 0 {
		return out
	}
	for _, s := range p.Sample {
		var funcs []string
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function != nil {
					funcs = append(funcs, ln.Function.Name)
				}
			}
		}
		i := 0
		for i < len(funcs)-1 && strings.HasPrefix(funcs[i], "runtime.") {
			i++
		}
		if len(funcs) == 0 {
			continue
		}
		key := strings.Join(funcs[i:], "\n")
		st := out[key]
		st.frames = funcs[i:]
		if i > 0 {
			st.wait = funcs[i-1]
		}
		st.count += s.Value[0]
		out[key] = st
	}
	return out
}

// leakedNow is how many goroutines the running target holds blocked
// forever (0 when it serves no leak profile).
func (f *fuzzer) leakedNow(ctx context.Context) int64 {
	child, _, _, err := f.sup.ensure(ctx)
	if err != nil {
		return 0
	}
	p, err := target.Leaked(ctx, target.ProfileOptions{PprofURL: leakURL(child.URL)})
	if err != nil {
		return 0
	}
	var n int64
	for _, st := range leakedStacks(p) {
		n += st.count
	}
	return n
}

func (f *fuzzer) leakCrash(in result.FuzzInput, st leakedStack, n int64, trial int) *result.FuzzCrash {
	fs := make([]string, 0, leakFrames)
	for _, fn := range st.frames[:min(len(st.frames), leakFrames)] {
		fs = append(fs, textline.Of(fn, 0))
	}
	wait := ""
	if st.wait != "" {
		wait = ", parked in " + textline.Of(st.wait, 0)
	}
	c := &result.FuzzCrash{Class: crash.Leak, Frames: fs, Input: in, Original: in, Confirmed: true, Trials: trial, Seen: 1,
		Endpoint: endpointOf(f.o.Templates[in.Template]), FoundAfter: time.Since(f.start),
		Evidence: fmt.Sprintf("%d goroutine%s left blocked forever by this one request, at %s%s (the runtime's leak profile, "+
			"read before and after it on a fresh target)", n, map[bool]string{true: "", false: "s"}[n == 1], fs[0], wait),
		Shrink:    "not shrunk: the input alone leaves the goroutines behind",
		Signature: crash.Leak + " " + strings.Join(fs[:min(len(fs), 3)], " ")}
	setRequest(c, f.request(in))
	return c
}
