package analyzers

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

// stack is one sample as analyzers see it: function names leaf first
// (inlined calls expanded) and the sample's value. A stack deeper than
// 2×edgeFrames keeps its innermost and outermost edgeFrames functions:
// the ones between are elided (counted in elided, elidedOwn of them the
// target's own), so that no analyzer's work on a sample grows with a
// depth the target chose.
type stack struct {
	funcs     []string
	files     []string
	kinds     []string // whose code each frame is (frames.Own, …)
	value     int64
	serving   bool // under request handling
	id        int  // the sample's place among its profile's stacks
	elided    int  // frames left out between funcs[edgeFrames-1] and funcs[edgeFrames]
	elidedOwn int  // of them, the target's own
	locs      int  // the sample's locations: at the profiler's depth, its goroutine's start was cut off
}

// edgeFrames is how many of a stack's innermost frames, and of its
// outermost, the analyzers see. Go's CPU profiles hold at most 64
// locations a sample (a few more functions with inlining), so only a
// recursion deeper than any real profile's loses its middle: a hostile
// profile's one sample of a million frames is 128 here.
const edgeFrames = 64

// stacks flattens p's samples at the value index named typ (the profile's
// default when typ is empty or absent). A sample of a value below zero
// (lib/pprofio drops them on read; this is the analyzers' own bound), or
// one that would carry the total past what an int64 holds, is left out.
func stacks(p *profile.Profile, typ string, code frames.Code) ([]stack, int64) {
	return stacksUntil(nil, p, typ, code)
}

// stacksUntil is stacks until done is closed: then it returns at once.
func stacksUntil(done <-chan struct{}, p *profile.Profile, typ string, code frames.Code) ([]stack, int64) {
	if p == nil {
		return nil, 0
	}
	idx, err := p.SampleIndexByName(typ)
	if err != nil {
		idx, _ = p.SampleIndexByName("")
	}
	out := make([]stack, 0, len(p.Sample))
	kinds := map[*profile.Function]string{}
	kind := func(f *profile.Function) string {
		k, ok := kinds[f]
		if !ok {
			k = code.Kind(f.Name, f.Filename)
			kinds[f] = k
		}
		return k
	}
	var total int64
	for n, s := range p.Sample {
		if n%1024 == 0 && closed(done) {
			break
		}
		if idx >= len(s.Value) {
			continue
		}
		v := s.Value[idx]
		if v <= 0 || v > math.MaxInt64-total {
			continue
		}
		depth := 0
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil {
					depth++
				}
			}
		}
		st := stack{value: v, id: len(out), locs: len(s.Location)}
		n := min(depth, 2*edgeFrames)
		st.funcs, st.files, st.kinds = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		i := 0
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				f := line.Function
				if f == nil {
					continue
				}
				if i >= edgeFrames && i < depth-edgeFrames {
					st.elided++
					if kind(f) == frames.Own {
						st.elidedOwn++
					}
				} else {
					st.funcs = append(st.funcs, f.Name)
					st.files = append(st.files, f.Filename)
					st.kinds = append(st.kinds, kind(f))
				}
				i++
			}
		}
		if measuring(st.funcs) {
			continue
		}
		out = append(out, st)
		total += v
	}
	return out, total
}

func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// measurementPkgs serve the profiles probe fetches while it measures:
// their work (gzip of every profile served, fgprof's stack walks) is the
// cost of being measured, not the target's, and a cheap endpoint would
// otherwise show repeated gzip under /debug/pprof as its own.
var measurementPkgs = []string{"net/http/pprof.", "runtime/pprof.", "github.com/felixge/fgprof."}

func measuring(funcs []string) bool {
	for _, fn := range funcs {
		for _, p := range measurementPkgs {
			if strings.HasPrefix(fn, p) {
				return true
			}
		}
	}
	return false
}

// doneOnce says whether a sample is work inside a sync.Once (OnceFunc,
// OnceValue): done the first time only, so already moved out of the
// request path however long it took (a cache built by the first request).
func doneOnce(st stack) bool {
	for _, fn := range st.funcs {
		if fn == "sync.(*Once).doSlow" {
			return true
		}
	}
	return false
}

// ValueTypes lists a profile's sample types, for error messages.
func ValueTypes(p *profile.Profile) []string {
	var ts []string
	for _, st := range p.SampleType {
		ts = append(ts, st.Type)
	}
	return ts
}

// CPUTime is the CPU time a CPU profile sampled.
func CPUTime(p *profile.Profile) time.Duration {
	_, total := stacks(p, "cpu", frames.Code{})
	return time.Duration(total)
}

// FuncTotals are each function's flat and cumulative values in p (of the
// value named typ), and their total: they add up across profiles.
func FuncTotals(p *profile.Profile, typ string) (flat, cum map[string]float64, total float64) {
	flat, cum = map[string]float64{}, map[string]float64{}
	ss, sum := stacks(p, typ, frames.Code{})
	for _, s := range ss {
		v := float64(s.value)
		if len(s.funcs) > 0 {
			flat[s.funcs[0]] += v
		}
		seen := map[string]bool{}
		for _, f := range s.funcs {
			if !seen[f] { // recursion counts once
				seen[f] = true
				cum[f] += v
			}
		}
	}
	return flat, cum, float64(sum)
}

// SampleTotal is the sum of p's values of type typ (e.g. "alloc_space"
// bytes, "alloc_objects", "cpu" nanoseconds); NaN without such a type.
func SampleTotal(p *profile.Profile, typ string) float64 {
	if p == nil {
		return math.NaN()
	}
	idx, err := p.SampleIndexByName(typ)
	if err != nil || typ == "" {
		return math.NaN()
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[idx]
	}
	return float64(sum)
}

// BackgroundGC is the share of p's CPU samples that the runtime's memory
// goroutines spent (the collector marking and sweeping, the scavenger
// returning freed pages): work paid for by every allocation, which a
// finding that allocates causes its part of. Assists are left out: they
// run on the allocating goroutine, inside its stack.
func BackgroundGC(p *profile.Profile) float64 {
	total := SampleTotal(p, "cpu")
	if !(total > 0) {
		return 0
	}
	idx, _ := p.SampleIndexByName("cpu")
	var gc int64
	for _, s := range p.Sample {
		if holdsFunc(s, "runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge") {
			gc += s.Value[idx]
		}
	}
	return float64(gc) / total
}

// holdsFunc says whether a sample's stack holds a function of one of the
// names.
func holdsFunc(s *profile.Sample, names ...string) bool {
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function != nil && slices.Contains(names, ln.Function.Name) {
				return true
			}
		}
	}
	return false
}
