package analyzers

import (
	"context"
	"fmt"
	"sort"
	"strings"
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
	markConnection  = "connection"   // reading or writing a client's connection (a WebSocket loop)
)

func isMarker(class string) bool {
	switch class {
	case markServing, markRequestBody, markSending, markStorage, markConnection:
		return true
	}
	return false
}

// samples are the profiles as the detectors see them.
type samples struct {
	cpu          []stack
	cpuTotal     int64
	requestTotal int64 // CPU of the goroutines serving requests (splitCPU)
	split        CPUSplit
	gc           []*Rule // the rules measuring the collector: its goroutines are kept apart
	allocs       []stack
	allocTotal   int64
	hasCPU       bool // a CPU profile was given (alloc-only findings need its samples)
	markers      map[string][]*Rule
	done         <-chan struct{} // the analysis is cancelled (nil: never)
	cut          bool            // it was, and the loops stopped
}

// stopped says whether the analysis was cancelled: every loop over the
// samples asks, so that Ctrl-C or SIGTERM ends it at once, whatever the
// profile holds.
func (s *samples) stopped() bool {
	if s.cut {
		return true
	}
	select {
	case <-s.done:
		s.cut = true
		return true
	default:
		return false
	}
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
	// CPU is how the target's CPU divides (the denominators of the shares).
	CPU CPUSplit
	// Interrupted: the context ended the analysis; the findings are those
	// complete before it (not nested), and the unexplained list is empty.
	Interrupted bool
}

// Analyze runs the rules over a CPU profile and an allocation profile (either
// may be nil) with what the run knows.
func Analyze(cpu, allocs *profile.Profile, ev Evidence, rules []Rule) Result {
	return AnalyzeContext(context.Background(), cpu, allocs, ev, rules)
}

// AnalyzeContext is Analyze until ctx ends: then it returns at once with
// what it had (Result.Interrupted).
func AnalyzeContext(ctx context.Context, cpu, allocs *profile.Profile, ev Evidence, rules []Rule) Result {
	rules = withPeers(rules)
	s := &samples{hasCPU: cpu != nil, markers: map[string][]*Rule{}, done: ctx.Done()}
	for i := range rules {
		if isMarker(rules[i].Class) {
			s.markers[rules[i].Class] = append(s.markers[rules[i].Class], &rules[i])
		}
		if rules[i].Detector == "gc" {
			s.gc = append(s.gc, &rules[i])
		}
	}
	code := frames.Code{MainModule: ev.MainModule}
	if code.MainModule == "" {
		code.MainModule = frames.MainModule(cpu, allocs)
	}
	s.cpu, s.cpuTotal = stacksUntil(s.done, cpu, "cpu", code)
	s.allocs, s.allocTotal = stacksUntil(s.done, allocs, "alloc_space", code)
	if s.stopped() {
		return Result{Interrupted: true}
	}
	s.split = s.splitCPU(cpu)
	facts := readReplies(ev.Replies)
	var out []Finding
	var explaining []*Rule
	for i := range rules {
		r := &rules[i]
		if isMarker(r.Class) {
			continue
		}
		f := detectors[r.Detector].run(r, s, ev, facts)
		if s.stopped() {
			break // f, if any, is of the samples seen before
		}
		if f == nil {
			continue
		}
		f.Endpoint = ev.Endpoint
		if r.Class != "load-time" {
			f.Class, f.Suggestion = r.Class, r.Suggestion
		}
		if r.Class == "load-time" && f.Class == "" {
			class, why, suggestion := facts.classifyInput(r, f.inputFrom)
			f.Class, f.Suggestion = class, suggestion
			f.Evidence += "; " + why
		}
		f.Severity = severity(max(f.CPUShare, f.AllocShare))
		if r.Detector == "gc" { // its allocation share is the sites', not the collector's
			f.Severity = severity(f.CPUShare)
		}
		out = append(out, *f)
		if r.Detector != "reply" { // a whole reply explains no part of itself
			explaining = append(explaining, r)
		}
	}
	if f := repeatedWork(s, ev, facts, rules, out); f != nil && !s.stopped() { // a mechanism, not a catalog entry
		f.Endpoint, f.Severity = ev.Endpoint, severity(f.CPUShare)
		out = append(out, *f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return max(out[i].CPUShare, out[i].AllocShare) > max(out[j].CPUShare, out[j].AllocShare)
	})
	if s.stopped() {
		return Result{Findings: out, Interrupted: true}
	}
	nested := nest(out, s)
	if s.stopped() {
		return Result{Findings: out, Interrupted: true}
	}
	un := unexplained(s, explaining, nested)
	return Result{Findings: nested, Unexplained: un, CPU: s.split, Interrupted: s.stopped()}
}

// nest gives each CPU sample to one top-level finding. Findings are
// placed largest first; one with half of its samples or more inside a
// finding already placed is a part of the smallest such (gzip inside a
// repeated reply) and keeps its share, which is a part of its parent's.
// A top-level finding keeps its share (pprof -focus's) and says, in
// CPUShareShared, the samples an earlier top-level one holds: the
// top-level shares less their shared parts add up to at most the CPU. Any
// detector's finding nests, by the samples it counted (or, when it does
// not say, by the samples through its innermost frame). The result
// lists each top-level finding, largest first, followed by its parts.
func nest(fs []Finding, s *samples) []Finding {
	if len(fs) < 2 {
		return fs
	}
	sets := make([]map[int]bool, len(fs))
	weight := make([]int64, len(fs))
	for i := range fs {
		if s.stopped() {
			return fs
		}
		sets[i] = fs[i].sampleSet(s)
		for id := range sets[i] {
			weight[i] += s.cpu[id].value
		}
	}
	order := make([]int, len(fs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return weight[order[a]] > weight[order[b]] })
	parent := make([]int, len(fs))
	holder := map[int]int{} // CPU sample → the top-level finding holding it
	var placed []int
	for _, i := range order {
		if s.stopped() {
			return fs
		}
		parent[i] = -1
		if weight[i] == 0 {
			continue
		}
		var inside int64
		for _, j := range placed {
			var ov int64
			for id := range sets[i] {
				if sets[j][id] {
					ov += s.cpu[id].value
				}
			}
			if 2*ov >= weight[i] && (parent[i] < 0 || weight[j] < weight[parent[i]]) {
				parent[i], inside = j, ov
			}
		}
		placed = append(placed, i)
		if p := parent[i]; p >= 0 {
			fs[i].PartOf = fs[p].Rule
			fs[i].Evidence += fmt.Sprintf("; %s of it lies inside %s, so it is shown as a part of that finding, not as more CPU",
				pct(share(inside, weight[i])), fs[p].Rule)
			continue
		}
		var taken int64
		by := map[string]bool{}
		for id := range sets[i] {
			h, held := holder[id]
			if !held {
				holder[id] = i
				continue
			}
			taken += s.cpu[id].value
			by[fs[h].Rule] = true
		}
		if taken > 0 {
			// The share stays what pprof -focus shows; the samples an
			// earlier finding holds are said, and kept apart for sums.
			fs[i].CPUShareShared = share(taken, s.cpuTotal)
			fs[i].Evidence += fmt.Sprintf("; %s of the CPU is this work inside %s, in that share too (as pprof -focus counts it for both)",
				pct(fs[i].CPUShareShared), strings.Join(sortedKeys(by), " and "))
		}
	}
	out := make([]Finding, 0, len(fs))
	var emit func(p int)
	emit = func(p int) {
		for i := range fs { // fs is in share order: parts follow it
			if parent[i] == p {
				out = append(out, fs[i])
				emit(i)
			}
		}
	}
	emit(-1)
	return out
}

// sampleSet is the CPU samples f counts: those its detector recorded, or
// the samples through its innermost frame.
func (f *Finding) sampleSet(s *samples) map[int]bool {
	set := map[int]bool{}
	if f.cpuSamples != nil {
		for _, id := range f.cpuSamples {
			set[id] = true
		}
		return set
	}
	if f.CPUShare == 0 || len(f.Frames) == 0 {
		return set
	}
	for _, st := range s.cpu {
		if s.stopped() {
			return set
		}
		for _, fn := range st.funcs {
			if frames.DisplayName(fn) == f.Frames[0] {
				set[st.id] = true
				break
			}
		}
	}
	return set
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
