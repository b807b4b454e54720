package analyzers

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/probehq/probe/lib/frames"
)

// byFrames measures a rule's work: the samples with one of its frames.
func byFrames(r *Rule, s *samples, ev Evidence, facts replyFacts) *Finding {
	return framesAtLeast(r, s, r.MinShare, facts, nil)
}

// weighed collects the samples of one kind of work: their value, and the
// heaviest chain of frames and own frame to show.
type weighed struct {
	cpu, request, alloc int64
	chains              map[string][]string
	chainW              map[string]int64
	ownW, outerW        map[string]int64 // outerW: by the outermost frame of the rule's run (CPU)
	ids                 []int            // the CPU samples counted, by stack id
}

func newWeighed() *weighed {
	return &weighed{chains: map[string][]string{}, chainW: map[string]int64{}, ownW: map[string]int64{}, outerW: map[string]int64{}}
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

// framesAtLeast is a finding of r's frames at minShare or more; also, when
// also is not nil, of the samples it says are the work (at the index it
// returns; -1 for none) where r's frames are not.
func framesAtLeast(r *Rule, s *samples, minShare float64, facts replyFacts, also func(stack) int) *Finding {
	work, input := newWeighed(), newWeighed()
	var in requestInput
	if r.Input {
		in = s.requestInput(r, facts)
	}
	pick := func(st stack, i int) *weighed {
		if r.Input && in.of(s, r, st, i) {
			return input
		}
		return work
	}
	held := map[string]int64{} // CPU of r's frames inside another rule's work, by that rule
	var allocating int64       // CPU allocating under an in-place rule's frames
	for _, st := range s.cpu {
		if s.stopped() {
			return nil
		}
		i, holder := r.match(st)
		if i < 0 && holder == nil && also != nil {
			i = also(st)
		}
		// Work under a sync.Once's doSlow is not skipped here: in a steady
		// run's profile it is a fresh Once per request (a library's encoder
		// built per request initialises itself in one: zstd's), not work
		// already done once.
		if i < 0 {
			if holder != nil {
				held[holder.ID] += st.value
			}
			continue
		}
		if r.InPlace && allocatesBelow(st, i) {
			allocating += st.value
			continue
		}
		w := pick(st, i)
		w.count(st)
		w.add(st, i, st.value)
		w.outerW[frames.DisplayName(st.funcs[r.outermost(st, i)])] += st.value
	}
	for _, st := range s.allocs {
		if s.stopped() {
			return nil
		}
		if i := r.matchAt(st); i >= 0 {
			w := pick(st, i)
			w.alloc += st.value
			if len(w.chains) == 0 || w.cpu == 0 { // no CPU sample shows the work: show where it allocates
				w.add(st, i, st.value)
			}
		}
	}
	f := s.finding(r, work, minShare)
	if f != nil && r.Invariant {
		f.inputFrom = s.inputOrigin(work.ids, r, s.requestInput(r, facts))
	}
	if f != nil || !r.Input {
		if f != nil && input.cpu+input.alloc > 0 {
			f.Evidence += fmt.Sprintf("; a further %s of the CPU decodes the request's own input, which no load can do for it",
				pct(share(input.cpu, s.cpuTotal)))
		}
		s.sayHeld(f, held)
		s.sayAllocating(f, allocating)
		return f
	}
	// Only the request's own input is decoded: per-request by nature.
	f = s.finding(r, input, minShare)
	if f == nil {
		return nil
	}
	f.Class = "info"
	f.Evidence += "; all of it decodes what arrives with each request (the request's body or form), which is per-request by nature"
	if work.cpu > 0 {
		// pprof's focus on the rule's frames counts this too: say it.
		f.Evidence += fmt.Sprintf("; a further %s of the CPU is this work on other data than the request's, under the %s a "+
			"finding of its own needs",
			pct(share(work.cpu, s.cpuTotal)), pct(minShare))
	}
	f.Suggestion = "Decode each request once, into a typed struct, and only the fields you need; this work cannot move to load time."
	s.sayHeld(f, held)
	return f
}

// allocatesBelow says whether the sample at an in-place rule's frame i is
// the runtime allocating (sort.Slice's swapper), not the rule's work.
func allocatesBelow(st stack, i int) bool {
	for k := 0; k < i; k++ {
		switch st.funcs[k] {
		case "runtime.mallocgc", "runtime.newobject", "runtime.makeslice", "runtime.growslice", "runtime.newarray":
			return true
		}
	}
	return false
}

// sayAllocating adds to f's evidence the CPU its frames spent allocating,
// which is not its work: pprof's focus on the frames counts it.
func (s *samples) sayAllocating(f *Finding, allocating int64) {
	if f != nil && share(allocating, s.cpuTotal) >= 0.005 {
		f.Evidence += fmt.Sprintf("; a further %s of the CPU allocates under it, which is not %s", pct(share(allocating, s.cpuTotal)), f.Rule)
	}
}

// sayHeld adds to f's evidence the CPU of its rule's frames that other
// rules' work holds (held, by rule): pprof's focus on the frames counts it.
func (s *samples) sayHeld(f *Finding, held map[string]int64) {
	if f == nil || len(held) == 0 {
		return
	}
	var sum int64
	for _, v := range held {
		sum += v
	}
	if share(sum, s.cpuTotal) >= 0.005 {
		f.Evidence += fmt.Sprintf("; a further %s of the CPU is this work inside the work of %s, which holds it",
			pct(share(sum, s.cpuTotal)), strings.Join(sortedKeys(held), " and "))
	}
}

// finding is a finding of w's samples when they reach minShare: of the
// CPU with 200 ms of samples, or of the allocations with some CPU sample
// through the same work (a heap profile lags by up to a GC cycle, so
// allocations alone can be an earlier run's).
func (s *samples) finding(r *Rule, w *weighed, minShare float64) *Finding {
	cs, as := share(w.cpu, s.cpuTotal), share(w.alloc, s.allocTotal)
	cpuShown := cs >= minShare && w.cpu >= minCPUEvidence
	allocShown := as >= minShare && (w.cpu > 0 || !s.hasCPU) && !r.InPlace // an in-place work's allocations are not it
	if !cpuShown && !allocShown {
		return nil
	}
	f := &Finding{Rule: r.ID, CPUShare: cs, AllocShare: as, CPUShareOfRequests: share(w.request, s.requestTotal),
		Frames: heaviest(w.chainW, w.chains), OwnFrame: heaviestKey(w.ownW), WorkFrame: heaviestKey(w.outerW), cpuSamples: w.ids}
	f.Evidence = fmt.Sprintf("%s: %s of the target's CPU (%s of the CPU serving requests), %s of its allocations", r.What, pct(cs),
		pct(f.CPUShareOfRequests), pct(as))
	return f
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

// inputOrigin says where the input of work that is invariant by nature
// (what a template parse or a regexp compile is given) comes from, when
// the profiles show it is not a constant: the request (a body reader below
// the work, or code that reads the request asking for it, as for decoding),
// or storage (the own function asking for the work, or its own caller,
// reads files or a database in a sample of either profile); "" when they
// show neither (a literal, an embedded file).
func (s *samples) inputOrigin(ids []int, r *Rule, in requestInput) string {
	stored := map[string]bool{}
	for _, ss := range [][]stack{s.cpu, s.allocs} {
		for _, st := range ss {
			if s.stopped() {
				return ""
			}
			if j := s.markedAt(st, markStorage); j >= 0 {
				stored[ownAbove(st, j)] = true
			}
			for k, fn := range st.funcs {
				if strings.HasPrefix(fn, "database/sql.") {
					stored[ownAbove(st, k)] = true
					break
				}
			}
		}
	}
	delete(stored, "")
	var fromBody, fromStore string
	for _, id := range ids {
		st := s.cpu[id]
		i := r.matchAt(st)
		if i < 0 {
			continue
		}
		if fromBody == "" && in.of(s, r, st, i) {
			fromBody = "the request's body (the requests carried one, read by the code that asks for the work)"
			if s.readsRequestBelow(st, i) {
				fromBody = "the request's body, read as the work runs"
			}
		}
		if fromStore == "" {
			for _, site := range ownSites(st, i, 2) {
				if stored[site] {
					fromStore = "data read per request from files or a database (" + site + " reads them)"
					break
				}
			}
		}
	}
	if fromBody != "" {
		return fromBody
	}
	return fromStore
}

// ownSites are the innermost n frames of the target's own code at i or
// above: the function that asks for the work and its own callers.
func ownSites(st stack, i, n int) []string {
	var out []string
	for k := i; k < len(st.funcs) && len(out) < n; k++ {
		if st.kinds[k] == frames.Own {
			out = append(out, frames.DisplayName(st.funcs[k]))
		}
	}
	return out
}

// requestInput tells the decoding of what arrives with the request from
// the decoding of anything else by where the bytes come from: the code
// that asks for the decoding (the first frame above the decoder that is
// not the standard library's) is code that reads the request. Decoding
// asked for by a library that never touches the request (an interpreter
// parsing the JSON the server gave it) is of the server's own data.
type requestInput struct {
	sites   map[string]bool // own functions that decode the request's input
	modules map[string]bool // libraries that read the request: seen reading its body, or handed a request with a body to serve
}

func (in requestInput) of(s *samples, r *Rule, st stack, i int) bool {
	if s.readsRequestBelow(st, i) {
		return true
	}
	k := asker(r, st, i)
	switch {
	case k < 0:
		return false
	case st.kinds[k] == frames.Own:
		return in.sites[frames.DisplayName(st.funcs[k])]
	}
	return in.modules[frames.Module(st.funcs[k])]
}

// asker is the frame that asked for r's work at i: the first frame above
// r's own frames that is neither the standard library's nor the
// runtime's; -1 when there is none.
func asker(r *Rule, st stack, i int) int {
	for k := i + 1; k < len(st.funcs); k++ {
		if st.kinds[k] != frames.Std && st.kinds[k] != frames.Runtime && !r.memo.matched(r, st.funcs[k]) {
			return k
		}
	}
	return -1
}

// requestInput finds the code that reads the request, in any sample of
// either profile: the own function or library above a request-body reader;
// when the run's requests carried bodies, a library whose ServeHTTP serves
// them (it is handed the body, and decodes it wherever it likes, on a
// goroutine of its own too); and own code near the handler that calls the
// decoder itself, unless it is seen reading a file.
func (s *samples) requestInput(r *Rule, facts replyFacts) requestInput {
	in := requestInput{sites: map[string]bool{}, modules: map[string]bool{}}
	readsFile := map[string]bool{}
	for _, ss := range [][]stack{s.cpu, s.allocs} {
		for _, st := range ss {
			if s.stopped() {
				return in
			}
			if j := s.markedAt(st, markRequestBody); j >= 0 {
				if site := ownAbove(st, j); site != "" {
					in.sites[site] = true
				}
				for k := j + 1; k < len(st.funcs) && st.kinds[k] != frames.Own; k++ {
					if st.kinds[k] == frames.ThirdParty {
						in.modules[frames.Module(st.funcs[k])] = true
						break
					}
				}
			}
			for k, fn := range st.funcs {
				if strings.HasPrefix(fn, "os.(*File).Read") || strings.HasPrefix(fn, "io/fs.ReadFile") || strings.HasPrefix(fn, "os.ReadFile") {
					if site := ownAbove(st, k); site != "" {
						readsFile[site] = true
					}
				}
				if facts.bodies && st.kinds[k] == frames.ThirdParty && strings.HasSuffix(fn, ".ServeHTTP") && s.marked(st, markServing) {
					in.modules[frames.Module(fn)] = true
				}
			}
		}
	}
	if facts.bodies {
		// The requests carried bodies: decoding that the handler itself or
		// its direct helper asks for is presumed to be of the body; deeper
		// code decodes something else. Middleware, the own code every
		// request passes through, is not counted: a server wraps its
		// handlers in as many layers as it likes.
		mw := s.middleware()
		for _, ss := range [][]stack{s.cpu, s.allocs} {
			for _, st := range ss {
				if s.stopped() {
					return in
				}
				i := r.matchAt(st)
				if i < 0 {
					continue
				}
				if k := asker(r, st, i); k >= 0 && st.kinds[k] == frames.Own {
					if site := frames.DisplayName(st.funcs[k]); !readsFile[site] && ownDepth(st, i, mw) <= 2 {
						in.sites[site] = true
					}
				}
			}
		}
	}
	return in
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
		if s.stopped() {
			return nil
		}
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
	lines := s.linesToFile()
	f := framesAtLeast(r, s, 0, facts, lines)
	var byFmt int64
	for _, st := range s.cpu {
		if r.matchAt(st) < 0 && lines(st) >= 0 {
			byFmt += st.value
		}
	}
	if f != nil && share(byFmt, s.cpuTotal) >= 0.005 {
		f.Evidence += fmt.Sprintf("; %s of the CPU writes lines with fmt straight into a file (stdout, stderr or a log "+
			"file), no logging library",
			pct(share(byFmt, s.cpuTotal)))
	}
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
		f.Evidence += fmt.Sprintf("; the target wrote %d lines (%.1f MB) to stderr during the run, %.1f a request", ev.LogLines,
			float64(ev.LogBytes)/1e6, perReq)
		storm = storm || perReq >= 0.5
	}
	if !storm || f.CPUShare == 0 && ev.LogLines == 0 {
		return nil
	}
	return f
}

// linesToFile finds log lines written without a logging library: fmt
// formatting straight into a file (fmt.Println to stdout, fmt.Fprintf to
// os.Stderr or a log file), not into a reply or a buffer. A call site
// (the fmt function and its caller) seen writing to a file in some sample
// writes lines: its samples that format them count too. The returned
// func gives a sample's fmt frame at such a site, or -1.
func (s *samples) linesToFile() func(stack) int {
	sites := map[string]bool{}
	site := func(st stack, j int) string { return st.funcs[j] + " ← " + st.funcs[j+1] }
	for _, st := range s.cpu {
		for k := 0; k+2 < len(st.funcs); k++ {
			if !strings.HasPrefix(st.funcs[k], "os.(*File).Write") {
				continue
			}
			for j := k + 1; j+1 < len(st.funcs) && j <= k+2; j++ { // io.WriteString may stand between
				if fmtPrint.MatchString(st.funcs[j]) {
					sites[site(st, j)] = true
				}
			}
		}
	}
	return func(st stack) int {
		if len(sites) == 0 {
			return -1
		}
		for j := 0; j+1 < len(st.funcs); j++ {
			if fmtPrint.MatchString(st.funcs[j]) && sites[site(st, j)] {
				return j
			}
		}
		return -1
	}
}

var fmtPrint = regexp.MustCompile(`^fmt\.F?[Pp]rint(f|ln)?$`)

// gcPressure measures the collector's share by its frames and names the
// top allocation sites, where the fix starts.
func gcPressure(r *Rule, s *samples, ev Evidence, facts replyFacts) *Finding {
	f := byFrames(r, s, ev, facts)
	if f == nil {
		return nil
	}
	// The collector allocates nothing itself: the header's allocation
	// share is the named sites', so that it agrees with the sites below.
	sites, sum := topAllocSites(s.allocs, s.allocTotal, 3)
	f.AllocShare = share(sum, s.allocTotal)
	_, rest, _ := strings.Cut(f.Evidence, "; ")
	f.Evidence = fmt.Sprintf("%s: %s of the target's CPU (%s of the CPU serving requests)", r.What, pct(f.CPUShare), pct(f.CPUShareOfRequests))
	if s.allocTotal > 0 {
		f.Evidence += fmt.Sprintf("; the top allocation sites hold %s of the allocations: %s", pct(f.AllocShare), sites)
	} else {
		f.Evidence += "; no allocation profile names the sites"
	}
	if rest != "" {
		f.Evidence += "; " + rest
	}
	return f
}

// topAllocSites names the n sites that allocate most (the innermost frame
// that is not the runtime's) with their shares, and their sum.
func topAllocSites(allocs []stack, total int64, n int) (string, int64) {
	flat := map[string]int64{}
	for _, s := range allocs {
		for i, fn := range s.funcs {
			if s.kinds[i] != frames.Runtime {
				flat[fn] += s.value
				break
			}
		}
	}
	names := heaviestFirst(flat)
	var parts []string
	var sum int64
	for _, fn := range names[:min(n, len(names))] {
		parts = append(parts, fmt.Sprintf("%s (%s)", fn, pct(share(flat[fn], total))))
		sum += flat[fn]
	}
	return strings.Join(parts, ", "), sum
}

// heaviestFirst is m's keys by their value, the largest first, ties by
// name: the order a list of the heaviest is shown in.
func heaviestFirst(m map[string]int64) []string {
	names := slices.Collect(maps.Keys(m))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	return names
}
