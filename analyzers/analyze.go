package analyzers

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"probe/probes"
)

// Finding is one kind of work the profiles show, with its share, where it
// sits, why probe believes what it says about it and what to do (DESIGN.md).
type Finding struct {
	Rule       string   `json:"rule"`
	Class      string   `json:"class"`
	Severity   string   `json:"severity"`
	CPUShare   float64  `json:"cpu_share"`
	AllocShare float64  `json:"alloc_share"`
	Frames     []string `json:"frames"`
	Endpoint   string   `json:"endpoint"`
	Evidence   string   `json:"evidence"`
	Suggestion string   `json:"suggestion"`
	// CPUShareOfRequests is the share of the CPU spent under request handling
	// (net/http's conn.serve) rather than of all the target's CPU.
	CPUShareOfRequests float64 `json:"cpu_share_of_requests"`
}

// Evidence is what a run knows beyond the profiles.
type Evidence struct {
	Endpoint string
	Digests  []probes.Digest // nil: no run (probe analyze), so no proof replies were invariant
	Requests int64
	LogLines int64 // lines the target wrote to stderr during the run, when probe started it
	LogBytes int64
	Duration time.Duration
}

// replyInvariance says whether every request key got one reply.
func (e Evidence) replyInvariance() (invariant bool, why string) {
	if e.Digests == nil {
		return false, "no run to show that the replies did not change (profiles analysed alone)"
	}
	keys, varying := 0, 0
	var requests int64
	for _, d := range e.Digests {
		if d.Requests < 2 {
			continue
		}
		keys++
		requests += d.Requests
		if d.Distinct > 1 {
			varying++
		}
	}
	switch {
	case keys == 0:
		return false, "too few requests per key to tell whether the replies change"
	case varying > 0:
		return false, fmt.Sprintf("%d of %d request keys got varying replies", varying, keys)
	}
	return true, fmt.Sprintf("each of %d request keys got the same reply every time (%d requests)", keys, requests)
}

// minCPUEvidence is the least CPU time (ns) a CPU share is claimed on:
// below it, a share of an idle target's few samples is noise.
const minCPUEvidence = int64(200 * time.Millisecond)

var serving = regexp.MustCompile(`^net/http\.\(\*conn\)\.serve$`)

// Analyze runs the rules over a CPU profile and an allocation profile (either
// may be nil) and returns the findings, largest share first.
func Analyze(cpu, allocs *profile.Profile, ev Evidence, rules []Rule) []Finding {
	cpuStacks, cpuTotal := stacks(cpu, "cpu")
	allocStacks, allocTotal := stacks(allocs, "alloc_space")
	var requestTotal int64
	for i := range cpuStacks {
		if hasFrame(cpuStacks[i], serving) {
			cpuStacks[i].serving = true
			requestTotal += cpuStacks[i].value
		}
	}
	invariant, why := ev.replyInvariance()
	var out []Finding
	for i := range rules {
		r := &rules[i]
		var f *Finding
		switch r.ID {
		case "per-request-full-scan":
			f = fullScan(r, cpuStacks, cpuTotal)
		case "log-storm":
			// Lines counted on the target's stderr can show a storm that
			// costs little CPU: measure the share whatever it is.
			any := *r
			any.MinShare = 0
			if f = byFrames(&any, cpuStacks, cpuTotal, allocStacks, allocTotal, requestTotal); f != nil {
				f = logStorm(r, f, ev)
			}
		default:
			f = byFrames(r, cpuStacks, cpuTotal, allocStacks, allocTotal, requestTotal)
		}
		if f == nil {
			continue
		}
		if r.ID == "gc-pressure" {
			f.Evidence += "; top allocation sites: " + topAllocSites(allocStacks, allocTotal, 3)
		}
		f.Endpoint = ev.Endpoint
		f.Class, f.Suggestion = r.Class, r.Suggestion
		if r.Class == "load-time" {
			switch {
			case r.Invariant:
				f.Evidence += "; this work does not depend on the request"
			case invariant:
				f.Evidence += "; " + why
			case ev.Digests == nil:
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
		s := max(f.CPUShare, f.AllocShare)
		f.Severity = "low"
		if s >= 0.3 {
			f.Severity = "high"
		} else if s >= 0.1 {
			f.Severity = "medium"
		}
		out = append(out, *f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return max(out[i].CPUShare, out[i].AllocShare) > max(out[j].CPUShare, out[j].AllocShare)
	})
	return out
}

func hasFrame(s stack, re *regexp.Regexp) bool {
	for _, f := range s.funcs {
		if re.MatchString(f) {
			return true
		}
	}
	return false
}

// matchAt is the index (leaf first) of the first frame r matches, or -1.
func (r *Rule) matchAt(s stack) int {
	for _, f := range s.funcs {
		if r.memo.excluded(r, f) {
			return -1
		}
	}
	for i, f := range s.funcs {
		if r.memo.matched(r, f) {
			return i
		}
	}
	return -1
}

// ruleMemo remembers a rule's verdict per function name: a profile repeats
// a few thousand names across its samples, and each regexp runs once per name.
type ruleMemo struct {
	mu             sync.Mutex
	match, exclude map[string]bool
}

func (m *ruleMemo) matched(r *Rule, fn string) bool {
	return m.verdict(m.match, r.frames, fn)
}

func (m *ruleMemo) excluded(r *Rule, fn string) bool {
	if len(r.exclude) == 0 {
		return false
	}
	return m.verdict(m.exclude, r.exclude, fn)
}

func (m *ruleMemo) verdict(cache map[string]bool, res []*regexp.Regexp, fn string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := cache[fn]
	if !ok {
		for _, re := range res {
			if re.MatchString(fn) {
				v = true
				break
			}
		}
		cache[fn] = v
	}
	return v
}

// byFrames measures a rule's work: the samples with one of its frames.
func byFrames(r *Rule, cpu []stack, cpuTotal int64, allocs []stack, allocTotal, requestTotal int64) *Finding {
	var cpuPart, reqPart, allocPart int64
	heaviest := map[string]int64{}
	chains := map[string][]string{}
	for _, s := range cpu {
		i := r.matchAt(s)
		if i < 0 {
			continue
		}
		cpuPart += s.value
		if s.serving {
			reqPart += s.value
		}
		chain := callers(s, i)
		key := strings.Join(chain, "\n")
		heaviest[key] += s.value
		chains[key] = chain
	}
	cpuChains := len(chains) > 0
	for _, s := range allocs {
		if i := r.matchAt(s); i >= 0 {
			allocPart += s.value
			if !cpuChains { // no CPU sample shows the work: show where it allocates
				chain := callers(s, i)
				key := strings.Join(chain, "\n")
				heaviest[key] += s.value
				chains[key] = chain
			}
		}
	}
	cs, as := share(cpuPart, cpuTotal), share(allocPart, allocTotal)
	cpuShown := cs >= r.MinShare && cpuPart >= minCPUEvidence
	if !cpuShown && as < r.MinShare {
		return nil
	}
	f := &Finding{Rule: r.ID, CPUShare: cs, AllocShare: as, CPUShareOfRequests: share(reqPart, requestTotal), Frames: heaviestChain(heaviest, chains)}
	f.Evidence = fmt.Sprintf("%s: %s of the target's CPU (%s of the CPU serving requests), %s of its allocations", r.What, pct(cs), pct(f.CPUShareOfRequests), pct(as))
	return f
}

// callers is what a finding shows of a stack: the matched frame (at i) and a
// few callers, then, when it is further up, the first frame of the target's
// own code, where the fix goes.
func callers(s stack, i int) []string {
	var out []string
	j := i
	for ; j < len(s.funcs) && len(out) < 4; j++ {
		if strings.HasPrefix(s.funcs[j], "runtime.") && len(out) > 0 {
			continue
		}
		out = append(out, displayName(s.funcs[j]))
	}
	for k := i; k < len(s.funcs); k++ {
		if codeKind(s.funcs[k], s.files[k]) != "own" {
			continue
		}
		if k >= j {
			if k > j {
				out = append(out, "…")
			}
			out = append(out, displayName(s.funcs[k]))
			if k+1 < len(s.funcs) && codeKind(s.funcs[k+1], s.files[k+1]) == "own" {
				out = append(out, displayName(s.funcs[k+1]))
			}
		}
		break
	}
	return out
}

// displayName elides the type arguments of generic functions, which Go
// writes out whole (go.shape.struct { … } can run to hundreds of bytes).
func displayName(fn string) string {
	if !strings.Contains(fn, "[") {
		return fn
	}
	var b strings.Builder
	depth := 0
	for _, r := range fn {
		switch {
		case r == '[':
			if depth == 0 {
				b.WriteString("[…]")
			}
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func heaviestChain(weights map[string]int64, chains map[string][]string) []string {
	best, bestW := "", int64(-1)
	for k, w := range weights {
		if w > bestW || w == bestW && k < best {
			best, bestW = k, w
		}
	}
	return chains[best]
}

// fullScan finds the target's own function whose cost is its own loop: the
// samples under it whose frames below it are only its own code, the runtime
// and cheap standard packages (no library doing "real" work), as seed 002's
// layout walking every note to find the feeds.
func fullScan(r *Rule, cpu []stack, total int64) *Finding {
	type cand struct {
		part, depth int64
		chain       []string
	}
	cands := map[string]*cand{}
	for _, s := range cpu {
		seen := map[string]bool{}
		for i := range s.funcs {
			fn := s.funcs[i]
			if seen[fn] || codeKind(fn, s.files[i]) != "own" {
				continue
			}
			seen[fn] = true
			cheap := true
			for j := 0; j < i && cheap; j++ {
				switch k := codeKind(s.funcs[j], s.files[j]); k {
				case "own", "runtime":
				case "std":
					cheap = cheapStd[pkgPath(s.funcs[j])]
				default:
					cheap = false
				}
			}
			if !cheap {
				continue
			}
			c := cands[fn]
			if c == nil {
				c = &cand{chain: callers(s, i)}
				cands[fn] = c
			}
			c.part += s.value
			c.depth += int64(i) * s.value
		}
	}
	var bestPart int64
	for _, c := range cands {
		bestPart = max(bestPart, c.part)
	}
	if share(bestPart, total) < r.MinShare || bestPart < minCPUEvidence {
		return nil
	}
	// Of the functions that carry the walk (a caller and its callee carry the
	// same samples), name the deepest: the loop itself.
	var pick string
	var pickDepth float64
	for fn, c := range cands {
		if float64(c.part) < 0.97*float64(bestPart) {
			continue
		}
		d := float64(c.depth) / float64(c.part)
		if pick == "" || d < pickDepth || d == pickDepth && fn < pick {
			pick, pickDepth = fn, d
		}
	}
	c := cands[pick]
	cs := share(c.part, total)
	return &Finding{Rule: r.ID, CPUShare: cs, Frames: c.chain,
		Evidence: fmt.Sprintf("%s: %s spends %s of the target's CPU in its own code, maps and slices, with no library doing the work", r.What, pick, pct(cs))}
}

// logStorm adds what probe counted of the target's stderr, and drops the
// finding when logging is a small cost and few lines.
func logStorm(r *Rule, f *Finding, ev Evidence) *Finding {
	storm := f.CPUShare >= r.MinShare
	if ev.Requests > 0 && ev.LogLines > 0 {
		perReq := float64(ev.LogLines) / float64(ev.Requests)
		f.Evidence += fmt.Sprintf("; the target wrote %d lines (%.1f MB) to stderr during the run, %.1f a request", ev.LogLines, float64(ev.LogBytes)/1e6, perReq)
		storm = storm || perReq >= 0.5
	}
	if !storm || f.CPUShare == 0 && ev.LogLines == 0 {
		return nil
	}
	return f
}

func topAllocSites(allocs []stack, total int64, n int) string {
	flat := map[string]int64{}
	for _, s := range allocs {
		for i, fn := range s.funcs {
			if codeKind(fn, s.files[i]) != "runtime" {
				flat[fn] += s.value
				break
			}
		}
	}
	names := make([]string, 0, len(flat))
	for fn := range flat {
		names = append(names, fn)
	}
	sort.Slice(names, func(i, j int) bool { return flat[names[i]] > flat[names[j]] })
	var parts []string
	for _, fn := range names[:min(n, len(names))] {
		parts = append(parts, fmt.Sprintf("%s (%s)", fn, pct(share(flat[fn], total))))
	}
	if len(parts) == 0 {
		return "no allocation profile"
	}
	return strings.Join(parts, ", ")
}

// WindowSummary is one CPU window of the timeline: what took its CPU.
type WindowSummary struct {
	Window int           `json:"window"`
	Top    []ShareOfWork `json:"top"`
}

// ShareOfWork names a kind of work (a rule id, "other") and its share.
type ShareOfWork struct {
	Work  string  `json:"work"`
	Share float64 `json:"share"`
}

// Timeline tells, for each consecutive CPU window, the three largest kinds
// of work by the rules' frames: a GC burst or a reload shows as a change.
func Timeline(windows []*profile.Profile, rules []Rule) []WindowSummary {
	var out []WindowSummary
	for i, w := range windows {
		ss, total := stacks(w, "cpu")
		parts := map[string]int64{}
		for _, s := range ss {
			work := "other"
			for j := range rules {
				if len(rules[j].frames) > 0 && rules[j].matchAt(s) >= 0 {
					work = rules[j].ID
					break
				}
			}
			parts[work] += s.value
		}
		sum := WindowSummary{Window: i + 1}
		for work, v := range parts {
			sum.Top = append(sum.Top, ShareOfWork{work, share(v, total)})
		}
		sort.Slice(sum.Top, func(a, b int) bool {
			return sum.Top[a].Share > sum.Top[b].Share || sum.Top[a].Share == sum.Top[b].Share && sum.Top[a].Work < sum.Top[b].Work
		})
		sum.Top = sum.Top[:min(3, len(sum.Top))]
		out = append(out, sum)
	}
	return out
}

func asErr[T error](err error, target *T) bool {
	t, ok := err.(T)
	if ok {
		*target = t
	}
	return ok
}
