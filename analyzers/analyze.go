package analyzers

import (
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// minCPUEvidence is the least CPU time (ns) a CPU share is claimed on:
// below it, a share of an idle target's few samples is noise.
const minCPUEvidence = int64(200 * time.Millisecond)

var serving = regexp.MustCompile(`^net/http\.\(\*conn\)\.serve$`)

// samples are the profiles as the detectors see them.
type samples struct {
	cpu          []stack
	cpuTotal     int64
	requestTotal int64 // CPU under request handling
	allocs       []stack
	allocTotal   int64
}

// detector measures one rule's work in the samples; nil when the profiles
// do not show it. Detectors are looked up by the rule's "detector" name,
// so the catalog can name a new one without a switch on rule ids.
type detector struct {
	run         func(r *Rule, s *samples, ev Evidence) *Finding
	needsFrames bool // a rule using it must list frames
}

var detectors = map[string]detector{
	"frames":    {run: byFrames, needsFrames: true},
	"full-scan": {run: fullScan},
	"log-storm": {run: logStorm, needsFrames: true},
	"gc":        {run: gcPressure, needsFrames: true},
}

// Analyze runs the rules over a CPU profile and an allocation profile (either
// may be nil) and returns the findings, largest share first.
func Analyze(cpu, allocs *profile.Profile, ev Evidence, rules []Rule) []Finding {
	s := &samples{}
	s.cpu, s.cpuTotal = stacks(cpu, "cpu")
	s.allocs, s.allocTotal = stacks(allocs, "alloc_space")
	for i := range s.cpu {
		if hasFrame(s.cpu[i], serving) {
			s.cpu[i].serving = true
			s.requestTotal += s.cpu[i].value
		}
	}
	invariant, why := ev.replyInvariance()
	var out []Finding
	for i := range rules {
		r := &rules[i]
		f := detectors[r.Detector].run(r, s, ev)
		if f == nil {
			continue
		}
		f.Endpoint = ev.Endpoint
		f.Class, f.Suggestion = r.Class, r.Suggestion
		if r.Class == "load-time" {
			judgeClass(r, f, ev, invariant, why)
		}
		f.Severity = severity(max(f.CPUShare, f.AllocShare))
		out = append(out, *f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return max(out[i].CPUShare, out[i].AllocShare) > max(out[j].CPUShare, out[j].AllocShare)
	})
	return out
}

// judgeClass keeps a load-time claim only with evidence that the work does
// not depend on the request; otherwise the finding is information.
func judgeClass(r *Rule, f *Finding, ev Evidence, invariant bool, why string) {
	switch {
	case r.Invariant:
		f.Evidence += "; this work does not depend on the request"
	case invariant:
		f.Evidence += "; " + why
	case ev.Replies == nil:
		f.Class = "info"
		f.Evidence += "; " + why + ", so probe does not claim this work can move to load time"
		f.Suggestion = "If its result does not change between requests: " + strings.ToLower(r.Suggestion[:1]) + r.Suggestion[1:]
	default:
		f.Class = "info"
		f.Evidence += "; " + why + ", so probe does not claim this work can move to load time"
		if r.VaryingSuggestion != "" {
			f.Suggestion = r.VaryingSuggestion
		}
	}
}

func severity(s float64) string {
	switch {
	case s >= 0.3:
		return "high"
	case s >= 0.1:
		return "medium"
	}
	return "low"
}
