package analyzers

import (
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

// stack is one sample as analyzers see it: function names leaf first
// (inlined calls expanded) and the sample's value.
type stack struct {
	funcs   []string
	files   []string
	kinds   []string // whose code each frame is (frames.Own, …)
	value   int64
	serving bool // under request handling
	id      int  // the sample's place among its profile's stacks
}

// stacks flattens p's samples at the value index named typ (the profile's
// default when typ is empty or absent).
func stacks(p *profile.Profile, typ string, code frames.Code) ([]stack, int64) {
	if p == nil {
		return nil, 0
	}
	idx, err := p.SampleIndexByName(typ)
	if err != nil {
		idx, _ = p.SampleIndexByName("")
	}
	out := make([]stack, 0, len(p.Sample))
	var total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		if v == 0 {
			continue
		}
		st := stack{value: v, id: len(out)}
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil {
					st.funcs = append(st.funcs, line.Function.Name)
					st.files = append(st.files, line.Function.Filename)
					st.kinds = append(st.kinds, code.Kind(line.Function.Name, line.Function.Filename))
				}
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
