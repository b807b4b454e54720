package analyzers

import (
	"sort"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

// minCPUEvidence is the least CPU time (ns) a CPU share is claimed on:
// below it, a share of an idle target's few samples is noise.
const minCPUEvidence = int64(200 * time.Millisecond)

// Marker classes: catalog entries that mark frames for the evidence and
// make no finding of their own.
const (
	markServing     = "serving"      // a server handling a request (net/http, fasthttp, gRPC, HTTP/2)
	markRequestBody = "request-body" // reading what arrives with the request
	markSending     = "sending"      // writing the reply out
	markStorage     = "storage"      // reading files
)

func isMarker(class string) bool {
	return class == markServing || class == markRequestBody || class == markSending || class == markStorage
}

// samples are the profiles as the detectors see them.
type samples struct {
	cpu          []stack
	cpuTotal     int64
	requestTotal int64 // CPU under request handling
	allocs       []stack
	allocTotal   int64
	hasCPU       bool // a CPU profile was given (alloc-only findings need its samples)
	markers      map[string][]*Rule
}

// detector measures one rule's work in the samples; nil when the profiles
// do not show it. Detectors are looked up by the rule's "detector" name,
// so the catalog can name a new one without a switch on rule ids.
type detector struct {
	run         func(r *Rule, s *samples, ev Evidence, facts replyFacts) *Finding
	needsFrames bool // a rule using it must list frames
}

var detectors = map[string]detector{
	"frames":    {run: byFrames, needsFrames: true},
	"full-scan": {run: fullScan},
	"log-storm": {run: logStorm, needsFrames: true},
	"gc":        {run: gcPressure, needsFrames: true},
	"reply":     {run: repeatedReply},
}

// Result is what the analyzers found: the findings, largest share first,
// and the target's own code that no finding explains.
type Result struct {
	Findings    []Finding
	Unexplained []Unexplained
}

// Analyze runs the rules over a CPU profile and an allocation profile (either
// may be nil) with what the run knows.
func Analyze(cpu, allocs *profile.Profile, ev Evidence, rules []Rule) Result {
	s := &samples{hasCPU: cpu != nil, markers: map[string][]*Rule{}}
	for i := range rules {
		if isMarker(rules[i].Class) {
			s.markers[rules[i].Class] = append(s.markers[rules[i].Class], &rules[i])
		}
	}
	code := frames.Code{MainModule: ev.MainModule}
	if code.MainModule == "" {
		code.MainModule = frames.MainModule(cpu, allocs)
	}
	s.cpu, s.cpuTotal = stacks(cpu, "cpu", code)
	s.allocs, s.allocTotal = stacks(allocs, "alloc_space", code)
	for i := range s.cpu {
		if s.marked(s.cpu[i], markServing) {
			s.cpu[i].serving = true
			s.requestTotal += s.cpu[i].value
		}
	}
	facts := readReplies(ev.Replies)
	var out []Finding
	var explaining []*Rule
	for i := range rules {
		r := &rules[i]
		if isMarker(r.Class) {
			continue
		}
		f := detectors[r.Detector].run(r, s, ev, facts)
		if f == nil {
			continue
		}
		f.Endpoint = ev.Endpoint
		if r.Class != "load-time" {
			f.Class, f.Suggestion = r.Class, r.Suggestion
		}
		if r.Class == "load-time" && f.Class == "" {
			class, why, suggestion := facts.classify(r)
			f.Class, f.Suggestion = class, suggestion
			f.Evidence += "; " + why
		}
		f.Severity = severity(max(f.CPUShare, f.AllocShare))
		out = append(out, *f)
		if r.Detector != "reply" { // a whole reply explains no part of itself
			explaining = append(explaining, r)
		}
	}
	if f := repeatedWork(s, ev, facts, rules, out); f != nil { // a mechanism, not a catalog entry
		f.Endpoint, f.Severity = ev.Endpoint, severity(f.CPUShare)
		out = append(out, *f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return max(out[i].CPUShare, out[i].AllocShare) > max(out[j].CPUShare, out[j].AllocShare)
	})
	return Result{Findings: out, Unexplained: unexplained(s, explaining, out)}
}

// marked says whether a stack has a frame of a marker class.
func (s *samples) marked(st stack, class string) bool {
	return s.markedAt(st, class) >= 0
}

// markedAt is the index of the first frame of st a marker of class names,
// or -1.
func (s *samples) markedAt(st stack, class string) int {
	best := -1
	for _, r := range s.markers[class] {
		if i := r.matchAt(st); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best
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
