// Package leak turns a run's leak check (result.Leaks) into findings: the
// goroutines the runtime's leak profile found leaked during a load,
// grouped by stack, or, with no such profile, a goroutine count that did
// not come back down after it (evidence only, class info).
package leak

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/result"
)

// Run is what the leak check is read against: the load that ran.
type Run struct {
	Microload string // which load made the goroutines
	Endpoint  string
	Requests  int64
	// Clients is how many clients the load ran: each one's connection may
	// hold a goroutine of the target's until it closes, so a count that
	// grew by no more than that is no evidence.
	Clients int
}

// maxFrames bounds a finding's stack: a leaked goroutine's own frames are
// at its inner end.
const maxFrames = 32

// Findings are the leak check's findings: one `goroutine-leak` (class
// leak) a stack the leak profile found leaked during the load, the most
// first; or one `goroutine-growth` (class info) when only the goroutine
// counts were read and they grew by more than the load's clients.
func Findings(l *result.Leaks, r Run) []analyzers.Finding {
	if l == nil {
		return nil
	}
	switch l.Source {
	case result.LeakProfile:
		return leaked(l, r)
	case result.LeakGoroutines:
		grown := l.After - l.Before
		if grown <= int64(r.Clients) {
			return nil
		}
		return []analyzers.Finding{{Rule: "goroutine-growth", Class: "info", Severity: "info", Endpoint: r.Endpoint,
			Frames: []string{},
			Evidence: fmt.Sprintf("the target's goroutines went from %d before %s to %d %s after it (%s); "+
				"the target serves no leak profile, so this is a count, not a leak found: goroutines parked in a "+
				"pool or a cache count too", l.Before, textline.Of(r.Microload, 0), l.After, l.Settle,
				perThousand(grown, r.Requests)),
			Suggestion: "build the target with Go 1.27 (or 1.26 with GOEXPERIMENT=goroutineleakprofile) for its " +
				"/debug/pprof/goroutineleak, which names the leaked goroutines' stacks"}}
	}
	return nil
}

// leaked groups the leak profile's growth by stack, the runtime's frames
// of the wait left out.
func leaked(l *result.Leaks, r Run) []analyzers.Finding {
	if l.Grown == nil {
		return nil
	}
	code := frames.Code{MainModule: frames.MainModule(l.Grown)}
	samples, _ := analyzers.Samples(l.Grown, "", code)
	type group struct {
		funcs, kinds []string
		wait         string
		count        int64
	}
	groups := map[string]*group{}
	for _, s := range samples {
		i := 0
		for i < len(s.Funcs)-1 && s.Kinds[i] == frames.Runtime {
			i++
		}
		key := strings.Join(s.Funcs[i:], "\n")
		g := groups[key]
		if g == nil {
			g = &group{funcs: s.Funcs[i:], kinds: s.Kinds[i:]}
			if i > 0 {
				g.wait = s.Funcs[i-1]
			}
			groups[key] = g
		}
		g.count += s.Value
	}
	sorted := make([]*group, 0, len(groups))
	for _, g := range groups {
		if g.count > 0 {
			sorted = append(sorted, g)
		}
	}
	slices.SortFunc(sorted, func(a, b *group) int { return cmp.Compare(b.count, a.count) })
	var out []analyzers.Finding
	for _, g := range sorted {
		fs := make([]string, 0, min(len(g.funcs), maxFrames))
		own := ""
		for i, fn := range g.funcs[:min(len(g.funcs), maxFrames)] {
			fs = append(fs, textline.Of(fn, 0))
			if own == "" && g.kinds[i] == frames.Own {
				own = fs[i]
			}
		}
		wait := ""
		if g.wait != "" {
			wait = ", parked in " + textline.Of(g.wait, 0)
		}
		if by := l.Creators[g.funcs[len(g.funcs)-1]]; by != "" {
			// The go statement's function: where the goroutine was
			// started, most often the handler that left it behind.
			fs = append(fs, textline.Of(by, 0))
			wait += ", started by " + fs[len(fs)-1]
			if own == "" && code.Kind(by, "") == frames.Own {
				own = fs[len(fs)-1]
			}
		}
		out = append(out, analyzers.Finding{Rule: "goroutine-leak", Class: "leak", Severity: "high", Frames: fs,
			OwnFrame: own, Endpoint: r.Endpoint,
			Evidence: fmt.Sprintf("%d goroutines leaked during %s at %s%s (%s; the runtime's leak profile: "+
				"%d leaked before the load, %d after)", g.count, textline.Of(r.Microload, 0), fs[0], wait,
				perThousand(g.count, r.Requests), l.Before, l.After),
			Suggestion: "give the goroutine a way out: select on the request's context (ctx.Done()), " +
				"close the channel when nobody will send, or make the send non-blocking (a buffered channel)"})
	}
	return out
}

// perThousand is n for each 1,000 of the load's requests.
func perThousand(n, requests int64) string {
	if requests <= 0 {
		return fmt.Sprintf("+%d", n)
	}
	return fmt.Sprintf("+%d, %.1f per 1,000 requests of %d", n, float64(n)*1000/float64(requests), requests)
}
