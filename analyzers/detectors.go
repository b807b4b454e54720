package analyzers

import (
	"fmt"
	"sort"
	"strings"

	"github.com/probehq/probe/lib/frames"
)

// byFrames measures a rule's work: the samples with one of its frames.
func byFrames(r *Rule, s *samples, ev Evidence, facts replyFacts) *Finding {
	return framesAtLeast(r, s, r.MinShare, facts)
}

// weighed collects the samples of one kind of work: their value, and the
// heaviest chain of frames and own frame to show.
type weighed struct {
	cpu, request, alloc int64
	chains              map[string][]string
	chainW              map[string]int64
	ownW                map[string]int64
	ids                 []int // the CPU samples counted, by stack id
}

func newWeighed() *weighed {
	return &weighed{chains: map[string][]string{}, chainW: map[string]int64{}, ownW: map[string]int64{}}
}

// count adds a CPU sample to the work.
func (w *weighed) count(st stack) {
	w.cpu += st.value
	if st.serving {
		w.request += st.value
	}
	w.ids = append(w.ids, st.id)
}

func (w *weighed) add(st stack, i int, v int64) {
	chain := callers(st, i)
	key := strings.Join(chain, "\n")
	w.chainW[key] += v
	w.chains[key] = chain
	if own := ownAbove(st, i); own != "" {
		w.ownW[own] += v
	}
}

func framesAtLeast(r *Rule, s *samples, minShare float64, facts replyFacts) *Finding {
	work, input := newWeighed(), newWeighed()
	inputSites := map[string]bool{}
	if r.Input {
		inputSites = s.inputSites(r, facts)
	}
	pick := func(st stack, i int) *weighed {
		if r.Input && (inputSites[siteOf(st, i)] || s.readsRequestBelow(st, i)) {
			return input
		}
		return work
	}
	for _, st := range s.cpu {
		i := r.matchAt(st)
		if i < 0 {
			continue
		}
		w := pick(st, i)
		w.count(st)
		w.add(st, i, st.value)
	}
	for _, st := range s.allocs {
		if i := r.matchAt(st); i >= 0 {
			w := pick(st, i)
			w.alloc += st.value
			if len(w.chains) == 0 || w.cpu == 0 { // no CPU sample shows the work: show where it allocates
				w.add(st, i, st.value)
			}
		}
	}
	f := s.finding(r, work, minShare)
	if f != nil || !r.Input {
		if f != nil && input.cpu+input.alloc > 0 {
			f.Evidence += fmt.Sprintf("; a further %s of the CPU decodes the request's own input, which no load can do for it", pct(share(input.cpu, s.cpuTotal)))
		}
		return f
	}
	// Only the request's own input is decoded: per-request by nature.
	f = s.finding(r, input, minShare)
	if f == nil {
		return nil
	}
	f.Class = "info"
	f.Evidence += "; all of it decodes what arrives with each request (the request's body or form), which is per-request by nature"
	f.Suggestion = "Decode each request once, into a typed struct, and only the fields you need; this work cannot move to load time."
	return f
}

// finding is a finding of w's samples when they reach minShare: of the
// CPU with 200 ms of samples, or of the allocations with some CPU sample
// through the same work (a heap profile lags by up to a GC cycle, so
// allocations alone can be an earlier run's).
func (s *samples) finding(r *Rule, w *weighed, minShare float64) *Finding {
	cs, as := share(w.cpu, s.cpuTotal), share(w.alloc, s.allocTotal)
	cpuShown := cs >= minShare && w.cpu >= minCPUEvidence
	allocShown := as >= minShare && (w.cpu > 0 || !s.hasCPU)
	if !cpuShown && !allocShown {
		return nil
	}
	f := &Finding{Rule: r.ID, CPUShare: cs, AllocShare: as, CPUShareOfRequests: share(w.request, s.requestTotal),
		Frames: heaviest(w.chainW, w.chains), OwnFrame: heaviestKey(w.ownW), cpuSamples: w.ids}
	f.Evidence = fmt.Sprintf("%s: %s of the target's CPU (%s of the CPU serving requests), %s of its allocations", r.What, pct(cs), pct(f.CPUShareOfRequests), pct(as))
	return f
}

// siteOf is where work at frame i was asked for: the nearest frame of the
// target's own code above it, or "" when none is.
func siteOf(st stack, i int) string {
	return ownAbove(st, i)
}

// ownAbove is the innermost frame of the target's own code at i or above
// (towards the root), shown as its display name.
func ownAbove(st stack, i int) string {
	for k := i; k < len(st.funcs); k++ {
		if st.kinds[k] == frames.Own {
			return frames.DisplayName(st.funcs[k])
		}
	}
	return ""
}

// readsRequestBelow says whether the work at i reads the request as it
// runs: a request-body reader below it (a decoder on the body).
func (s *samples) readsRequestBelow(st stack, i int) bool {
	j := s.markedAt(st, markRequestBody)
	return j >= 0 && j < i
}

// inputSites are the own functions whose decoding r counts as decoding the
// request's input: those that read the request's body themselves (in any
// sample of either profile), and, when the run's requests carried bodies,
// the sites near the handler that are not seen reading a file.
func (s *samples) inputSites(r *Rule, facts replyFacts) map[string]bool {
	sites := map[string]bool{}
	readsFile := map[string]bool{}
	for _, ss := range [][]stack{s.cpu, s.allocs} {
		for _, st := range ss {
			if j := s.markedAt(st, markRequestBody); j >= 0 {
				if site := ownAbove(st, j); site != "" {
					sites[site] = true
				}
			}
			for k, fn := range st.funcs {
				if strings.HasPrefix(fn, "os.(*File).Read") || strings.HasPrefix(fn, "io/fs.ReadFile") || strings.HasPrefix(fn, "os.ReadFile") {
					if site := ownAbove(st, k); site != "" {
						readsFile[site] = true
					}
				}
			}
		}
	}
	if facts.bodies {
		// The requests carried bodies: decoding called by the handler
		// itself, by its direct helper, or by the server's libraries is
		// presumed to be of the body; deeper code decodes something else.
		// Middleware, the own code every request passes through, is not
		// counted: a server wraps its handlers in as many layers as it likes.
		mw := s.middleware()
		for _, ss := range [][]stack{s.cpu, s.allocs} {
			for _, st := range ss {
				if i := r.matchAt(st); i >= 0 {
					if site := siteOf(st, i); !readsFile[site] && ownDepth(st, i, mw) <= 2 && !libraryOwnData(st, i) {
						sites[site] = true
					}
				}
			}
		}
	}
	return sites
}

// libraryOwnData says whether the work at i is asked for by a third-party
// library that does not serve the request: an interpreter parsing its own
// values (go-jsonnet's std.parseJson of the notes the server gave it).
// What it decodes is the library's data, not the request's body; a
// library that serves requests (an RPC handler's ServeHTTP) may decode
// the body, and is presumed to.
func libraryOwnData(st stack, i int) bool {
	pkg := frames.PkgPath(st.funcs[i])
	library := false
	for k := i + 1; k < len(st.funcs) && st.kinds[k] != frames.Own; k++ {
		fn := st.funcs[k]
		if strings.HasSuffix(fn, ".ServeHTTP") || strings.HasSuffix(fn, ".serveConn") {
			return false
		}
		if st.kinds[k] == frames.ThirdParty && frames.PkgPath(fn) != pkg {
			library = true
		}
	}
	return library
}

// middleware are the target's own functions on nine in ten of the CPU
// samples that run the target's code while serving requests, by weight:
// the layers every request passes through, not a handler. Samples of the
// server library alone (net/http reading a request, flushing a reply) are
// left out: on a cheap endpoint they are a large part of the serving CPU,
// and counting them would leave no layer at nine in ten. With few such
// samples there is none.
func (s *samples) middleware() map[string]bool {
	weight := map[string]int64{}
	var total int64
	for _, st := range s.cpu {
		if !st.serving {
			continue
		}
		seen := map[string]bool{}
		for k, fn := range st.funcs {
			if st.kinds[k] == frames.Own && !seen[fn] {
				seen[fn] = true
				weight[fn] += st.value
			}
		}
		if len(seen) > 0 {
			total += st.value
		}
	}
	out := map[string]bool{}
	if total < minCPUEvidence {
		return out
	}
	for fn, w := range weight {
		if 10*w >= 9*total {
			out[fn] = true
		}
	}
	return out
}

// ownDepth counts the frames of the target's own code at i and above it,
// middleware left out: 1 for the handler the server called, 0 for none.
func ownDepth(st stack, i int, middleware map[string]bool) int {
	n := 0
	for k := i; k < len(st.funcs); k++ {
		if st.kinds[k] == frames.Own && !middleware[st.funcs[k]] {
			n++
		}
	}
	return n
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
		out = append(out, frames.DisplayName(s.funcs[j]))
	}
	for k := i; k < len(s.funcs); k++ {
		if s.kinds[k] != frames.Own {
			continue
		}
		if k >= j {
			if k > j {
				out = append(out, "…")
			}
			out = append(out, frames.DisplayName(s.funcs[k]))
			if k+1 < len(s.funcs) && s.kinds[k+1] == frames.Own {
				out = append(out, frames.DisplayName(s.funcs[k+1]))
			}
		}
		break
	}
	return out
}

func heaviest(weights map[string]int64, chains map[string][]string) []string {
	return chains[heaviestKey(weights)]
}

func heaviestKey(weights map[string]int64) string {
	best, bestW := "", int64(-1)
	for k, w := range weights {
		if w > bestW || w == bestW && k < best {
			best, bestW = k, w
		}
	}
	return best
}

// logStorm measures logging whatever its share (lines counted on the
// target's stderr can show a storm that costs little CPU), adds what probe
// counted, and keeps the finding when logging is costly or frequent.
func logStorm(r *Rule, s *samples, ev Evidence, facts replyFacts) *Finding {
	perReq := 0.0
	if ev.Requests > 0 {
		perReq = float64(ev.LogLines) / float64(ev.Requests)
	}
	f := framesAtLeast(r, s, 0, facts)
	if f == nil {
		if perReq < 0.5 {
			return nil
		}
		// Lines are cheap to write: no CPU sample may have caught one.
		// The lines counted are the evidence; the frames stay unknown.
		f = &Finding{Rule: r.ID, Evidence: r.What + ": no CPU sample caught it"}
	}
	storm := f.CPUShare >= r.MinShare
	if ev.Requests > 0 && ev.LogLines > 0 {
		f.Evidence += fmt.Sprintf("; the target wrote %d lines (%.1f MB) to stderr during the run, %.1f a request", ev.LogLines, float64(ev.LogBytes)/1e6, perReq)
		storm = storm || perReq >= 0.5
	}
	if !storm || f.CPUShare == 0 && ev.LogLines == 0 {
		return nil
	}
	return f
}

// gcPressure measures the collector's share by its frames and names the
// top allocation sites, where the fix starts.
func gcPressure(r *Rule, s *samples, ev Evidence, facts replyFacts) *Finding {
	f := byFrames(r, s, ev, facts)
	if f != nil {
		f.Evidence += "; top allocation sites: " + topAllocSites(s.allocs, s.allocTotal, 3)
	}
	return f
}

func topAllocSites(allocs []stack, total int64, n int) string {
	flat := map[string]int64{}
	for _, s := range allocs {
		for i, fn := range s.funcs {
			if s.kinds[i] != frames.Runtime {
				flat[fn] += s.value
				break
			}
		}
	}
	names := make([]string, 0, len(flat))
	for fn := range flat {
		names = append(names, fn)
	}
	sort.Slice(names, func(i, j int) bool {
		return flat[names[i]] > flat[names[j]] || flat[names[i]] == flat[names[j]] && names[i] < names[j]
	})
	var parts []string
	for _, fn := range names[:min(n, len(names))] {
		parts = append(parts, fmt.Sprintf("%s (%s)", fn, pct(share(flat[fn], total))))
	}
	if len(parts) == 0 {
		return "no allocation profile"
	}
	return strings.Join(parts, ", ")
}
