package analyzers

import (
	"fmt"
	"sort"
	"strings"

	"github.com/probehq/probe/lib/frames"
)

// RepeatedWorkRule is the id of the finding no catalog entry makes: work
// whose answer did not change, named by a mechanism, not by a library.
const RepeatedWorkRule = "repeated-work"

// A repeated-work finding needs minRepeatedWork of the CPU serving
// requests (below it, what is left beside the catalog's findings is the
// server's plumbing) and minRepeatedWorkAll of all the CPU (a collector
// busy with the work's garbage takes a large part of it).
const (
	minRepeatedWork    = 0.25
	minRepeatedWorkAll = 0.05
)

// maxCallees is how many library calls a finding or an unexplained entry lists.
const maxCallees = 3

// Callee is a call from the target's own code into a library (or the
// runtime), with the share of the CPU under it.
type Callee struct {
	Function string  `json:"function"`
	CPUShare float64 `json:"cpu_share"`
}

// calleeTally weighs the library calls own code makes: for each sample,
// the frame just below its innermost own frame, and the heaviest stack
// under each, to read a verb from when the call's own name has none.
type calleeTally struct {
	w       map[string]int64
	under   map[string]map[string]int64 // callee → the functions under it, by weight
	ownLeaf int64                       // samples whose leaf is own code
	ownFns  []string
}

func newCalleeTally() *calleeTally {
	return &calleeTally{w: map[string]int64{}, under: map[string]map[string]int64{}}
}

// add counts st, whose innermost own frame is at k.
func (t *calleeTally) add(st stack, k int) {
	if k == 0 || preempted(st.funcs[k-1]) {
		t.ownLeaf += st.value
		return
	}
	fn := frames.DisplayName(st.funcs[k-1])
	t.w[fn] += st.value
	if t.under[fn] == nil {
		t.under[fn] = map[string]int64{}
	}
	seen := map[string]bool{}
	for j := k - 2; j >= 0; j-- {
		if g := st.funcs[j]; !seen[g] && st.kinds[j] != frames.Runtime {
			seen[g] = true
			t.under[fn][g] += st.value
		}
	}
}

// preempted says whether fn is the runtime stopping own code where it
// was, not a call it made.
func preempted(fn string) bool {
	return fn == "runtime.asyncPreempt" || fn == "runtime.morestack" || fn == "runtime.newstack"
}

// top is the heaviest calls, each with its share of total.
func (t *calleeTally) top(total int64) []Callee {
	names := sortedKeys(t.w)
	sort.SliceStable(names, func(i, j int) bool { return t.w[names[i]] > t.w[names[j]] })
	var out []Callee
	for _, fn := range names {
		if len(out) == maxCallees || share(t.w[fn], total) < 0.01 {
			break
		}
		out = append(out, Callee{Function: fn, CPUShare: share(t.w[fn], total)})
	}
	return out
}

// looksLike reads what the calls do from their names, in this order: the
// names of the calls that are not the runtime's and hold a fifth of the
// work (of work in all), the target's own function names, the names of
// the lighter calls, then the functions under each call, heaviest first
// (the library's own helpers, the least telling); it returns the phrase
// ("reads csv") and the fix.
func (t *calleeTally) looksLike(total, work int64) (phrase, fix string) {
	try := func(chain []string) bool {
		if p, k, thing := doesPhrase(chain); p != "" {
			phrase, fix = p, fmt.Sprintf(k.fix, "the "+thing)
			return true
		}
		return false
	}
	var heavy, light []string
	for _, c := range t.top(total) {
		switch {
		case frames.Kind(c.Function, "") == frames.Runtime:
		case 5*t.w[c.Function] >= work:
			heavy = append(heavy, c.Function)
		default:
			light = append(light, c.Function)
		}
	}
	if try(heavy) || try(t.ownFns) || try(light) {
		return
	}
	for _, c := range append(heavy, light...) {
		under := t.under[c]
		names := sortedKeys(under)
		sort.SliceStable(names, func(i, j int) bool { return under[names[i]] > under[names[j]] })
		if try(names) {
			return
		}
	}
	return
}

// known is what the heaviest calls do when their names say it: a verb on
// a library call holding a fifth of the work or more ("reads csv");
// "" otherwise. The target's own names and a library's inner helpers say
// nothing the user cannot read themselves ("builds at" from the own
// buildAt, "appends seq" from a helper deep in slices.Collect).
func (t *calleeTally) known(total, work int64) string {
	var heavy []string
	for _, c := range t.top(total) {
		if frames.Kind(c.Function, "") != frames.Runtime && 5*t.w[c.Function] >= work {
			heavy = append(heavy, c.Function)
		}
	}
	phrase, _, _ := doesPhrase(heavy)
	return phrase
}

// innermostOwn is the index of st's innermost own frame, or -1.
func innermostOwn(st stack) int {
	for k := range st.funcs {
		if st.kinds[k] == frames.Own {
			return k
		}
	}
	return -1
}

// repeatedWork finds work the catalog has no rule for: when the replies of
// every varying request key are the same but for small fragments (a nonce,
// a timestamp, an order), the CPU the handlers spent under request
// handling made the same answer again. It names the innermost own
// function holding most of that CPU and the library calls under it, and
// words the fix from what the calls are called. Samples a catalog rule
// matches, or a full scan's finding holds, are left to it (it names a
// known library better), and so are samples of own code that reads the
// request's body (decoding the request is per-request by nature);
// sending the reply and reading files are not building it.
func repeatedWork(s *samples, ev Evidence, facts replyFacts, rules []Rule, found []Finding) *Finding {
	if !facts.run || facts.varying == 0 || !facts.near || facts.requests < minReplyRequests {
		return nil
	}
	// A full scan's finding holds what is under its function.
	scans := map[string]bool{}
	for _, f := range found {
		for i := range rules {
			if rules[i].ID == f.Rule && rules[i].Detector == "full-scan" && f.OwnFrame != "" {
				scans[f.OwnFrame] = true
			}
		}
	}
	bodySites := map[string]bool{}
	for _, ss := range [][]stack{s.cpu, s.allocs} {
		for _, st := range ss {
			if s.stopped() {
				return nil
			}
			if j := s.markedAt(st, markRequestBody); j >= 0 {
				if site := ownAbove(st, j); site != "" {
					bodySites[site] = true
				}
			}
		}
	}
	catalog := func(st stack) bool {
		for i := range rules {
			if r := &rules[i]; !isMarker(r.Class) && len(r.frames) > 0 && r.matchAt(st) >= 0 {
				return true
			}
		}
		return false
	}
	type sample struct {
		st    stack
		inner int
	}
	var work []sample
	var total int64
	cum := map[string]int64{}
	depth := map[string]int64{}
	for _, st := range s.cpu {
		if s.stopped() {
			return nil
		}
		if !st.serving || s.marked(st, markSending) || s.marked(st, markStorage) || catalog(st) || underAny(st, scans) {
			continue
		}
		k := innermostOwn(st)
		if k < 0 || readsBody(st, k, bodySites) {
			continue
		}
		work = append(work, sample{st, k})
		total += st.value
		seen := map[string]bool{}
		n := int64(0)
		for j := len(st.funcs) - 1; j >= 0; j-- {
			if st.kinds[j] != frames.Own {
				continue
			}
			if fn := frames.DisplayName(st.funcs[j]); !seen[fn] {
				seen[fn] = true
				cum[fn] += st.value
				depth[fn] += n * st.value
			}
			n++
		}
	}
	// The site: the deepest own function under which at least half of the
	// work happens (not the middleware that wraps every handler) and with
	// CPU enough to speak of; a helper with too little (a parser's, 21% of
	// a busy CI run's CPU) leaves it to its caller.
	site, best := "", 0.0
	for _, fn := range sortedKeys(cum) {
		c := cum[fn]
		enough := share(c, s.requestTotal) >= minRepeatedWork && share(c, s.cpuTotal) >= minRepeatedWorkAll && c >= minCPUEvidence
		if d := float64(depth[fn]) / float64(c); 2*c >= total && enough && (site == "" || d > best) {
			site, best = fn, d
		}
	}
	if site == "" {
		return nil
	}
	calls := newCalleeTally()
	var request int64
	for _, w := range work {
		if !hasFrame(w.st, site) {
			continue
		}
		calls.add(w.st, w.inner)
		request += w.st.value
	}
	// The own functions under the site whose own code runs, heaviest
	// first, then the site: a parser of the target's own is named by them.
	ownW := map[string]int64{}
	for _, w := range work {
		if hasFrame(w.st, site) && w.inner == 0 {
			for _, fn := range ownFunctionsUnder(w.st, site) {
				ownW[fn] += w.st.value
			}
		}
	}
	calls.ownFns = sortedKeys(ownW)
	sort.SliceStable(calls.ownFns, func(i, j int) bool { return ownW[calls.ownFns[i]] > ownW[calls.ownFns[j]] })
	calls.ownFns = append(calls.ownFns, site)
	phrase, fix := calls.looksLike(s.cpuTotal, cum[site])
	if phrase == "" {
		phrase, fix = "makes its result", "do it once and keep the result"
	}
	f := &Finding{Rule: RepeatedWorkRule, CPUShare: share(cum[site], s.cpuTotal), CPUShareOfRequests: share(request, s.requestTotal),
		OwnFrame: site, Callees: calls.top(s.cpuTotal)}
	for _, c := range f.Callees {
		f.Frames = append(f.Frames, c.Function)
	}
	f.Frames = append(f.Frames, site)
	var listed []string
	for _, c := range f.Callees {
		listed = append(listed, fmt.Sprintf("%s %s", c.Function, pct(c.CPUShare)))
	}
	if calls.ownLeaf > 0 && share(calls.ownLeaf, s.cpuTotal) >= 0.01 {
		listed = append(listed, fmt.Sprintf("its own code %s", pct(share(calls.ownLeaf, s.cpuTotal))))
	}
	f.Evidence = fmt.Sprintf("repeated work under %s: %s of the target's CPU (%s of the CPU serving requests) made, for each "+
		"request key, an answer that did not change but for the fragments; it looks like it %s (%s), and no catalog rule names it",
		site, pct(f.CPUShare), pct(f.CPUShareOfRequests), phrase, strings.Join(listed, ", "))
	r := &Rule{ID: RepeatedWorkRule, Class: "load-time", What: "what " + site + " makes", Scope: scopePart,
		Suggestion: fmt.Sprintf("In %s, %s.", site, fix)}
	class, why, suggestion := facts.classify(r)
	f.Class, f.Suggestion = class, suggestion
	f.Evidence += "; " + why
	if facts.bodies {
		f.Evidence += "; the requests carried bodies, and if this work decodes them it is per-request by nature (no sample " +
			"caught it reading them)"
	}
	if class != "load-time" {
		f.Evidence += "; what would settle it: requests with other inputs (another key, a parameter the server ignores) whose " +
			"replies stay the same but for the fragment"
	}
	return f
}

// readsBody says whether the own code at the sample's innermost own frame,
// or its own caller, is seen reading the request's body.
func readsBody(st stack, k int, bodySites map[string]bool) bool {
	n := 0
	for j := k; j < len(st.funcs) && n < 2; j++ {
		if st.kinds[j] == frames.Own {
			if bodySites[frames.DisplayName(st.funcs[j])] {
				return true
			}
			n++
		}
	}
	return false
}

func underAny(st stack, fns map[string]bool) bool {
	for k, f := range st.funcs {
		if st.kinds[k] == frames.Own && fns[frames.DisplayName(f)] {
			return true
		}
	}
	return false
}

func hasFrame(st stack, fn string) bool {
	for k, f := range st.funcs {
		if st.kinds[k] == frames.Own && frames.DisplayName(f) == fn {
			return true
		}
	}
	return false
}

// ownFunctionsUnder are the own functions of st below site, innermost first.
func ownFunctionsUnder(st stack, site string) []string {
	var out []string
	for k, f := range st.funcs {
		if st.kinds[k] != frames.Own {
			continue
		}
		if frames.DisplayName(f) == site {
			break
		}
		out = append(out, f)
	}
	return out
}
