package analyzers

import (
	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

// Sample is one stack of a profile as the analyzers read it (stacks), for
// the analyses beside them (analyzers/fanout): its functions innermost
// first, whose code each is (frames.Own, …), and its value.
type Sample struct {
	Funcs, Kinds []string
	Value        int64
}

// Samples are p's stacks at the value typ, and their total (stacks).
func Samples(p *profile.Profile, typ string, code frames.Code) ([]Sample, int64) {
	sts, total := stacks(p, typ, code)
	out := make([]Sample, len(sts))
	for i, st := range sts {
		out[i] = Sample{Funcs: st.funcs, Kinds: st.kinds, Value: st.value}
	}
	return out, total
}

func (s Sample) stack() stack { return stack{funcs: s.Funcs, kinds: s.Kinds, value: s.Value} }

// Callers is what a finding shows of the sample from its frame i (callers).
func (s Sample) Callers(i int) []string { return callers(s.stack(), i) }

// OwnAbove is the innermost frame of the target's own code at i or above
// (ownAbove).
func (s Sample) OwnAbove(i int) string { return ownAbove(s.stack(), i) }

// Heaviest is the chain of the largest weight, ties by key.
func Heaviest(weights map[string]int64, chains map[string][]string) []string {
	return heaviest(weights, chains)
}

// Severity is a finding's severity for its share of the CPU.
func Severity(share float64) string { return severity(share) }

// KindAt is the catalog's rule whose frames the sample's work is ("" none)
// and the frame it matched (-1 none).
func KindAt(s Sample, rules []Rule) (string, int) {
	for j := range rules {
		r := &rules[j]
		if len(r.frames) == 0 || isMarker(r.Class) || r.Class == "gc-pressure" {
			continue
		}
		if i := r.matchAt(s.stack()); i >= 0 {
			return r.ID, i
		}
	}
	return "", -1
}
