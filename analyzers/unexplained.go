package analyzers

import (
	"sort"

	"github.com/probehq/probe/lib/frames"
)

// minUnexplained is the least share of the CPU an unexplained function
// must hold to be listed, and maxUnexplained how many are.
const (
	minUnexplained = 0.05
	maxUnexplained = 5
)

// unexplained lists the target's own functions that hold CPU no finding
// explains: each CPU sample that no finding's rule matches goes to the
// innermost own frame in it; the path runs from the outermost own frame.
func unexplained(s *samples, rules []*Rule, findings []Finding) []Unexplained {
	scans := map[string]bool{} // full scans and repeated work explain what is under their function
	for _, f := range findings {
		if f.Rule == RepeatedWorkRule && f.OwnFrame != "" {
			scans[f.OwnFrame] = true
		}
		if f.OwnFrame != "" {
			for _, r := range rules {
				if r.ID == f.Rule && r.Detector == "full-scan" {
					scans[f.OwnFrame] = true
				}
			}
		}
	}
	weight := map[string]int64{}
	paths := map[string]map[string]int64{}
	pathOf := map[string][]string{}
	calls := map[string]*calleeTally{}
	for _, st := range s.cpu {
		if explained(st, rules, scans) {
			continue
		}
		var own []string // outermost first
		for k := len(st.funcs) - 1; k >= 0; k-- {
			if st.kinds[k] == frames.Own {
				own = append(own, frames.DisplayName(st.funcs[k]))
			}
		}
		if len(own) == 0 {
			continue
		}
		fn := own[len(own)-1]
		weight[fn] += st.value
		if calls[fn] == nil {
			calls[fn] = newCalleeTally()
			calls[fn].ownFns = []string{fn}
		}
		calls[fn].add(st, innermostOwn(st))
		if paths[fn] == nil {
			paths[fn] = map[string]int64{}
		}
		key := joinPath(own)
		paths[fn][key] += st.value
		pathOf[key] = own
	}
	var out []Unexplained
	for fn, w := range weight {
		if sh := share(w, s.cpuTotal); sh >= minUnexplained && w >= minCPUEvidence {
			u := Unexplained{Function: fn, Path: pathOf[heaviestKey(paths[fn])], CPUShare: sh, Callees: calls[fn].top(s.cpuTotal)}
			if phrase, _ := calls[fn].looksLike(s.cpuTotal, w); phrase != "" {
				u.LooksLike = "looks like it " + phrase
			}
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].CPUShare > out[j].CPUShare || out[i].CPUShare == out[j].CPUShare && out[i].Function < out[j].Function
	})
	return out[:min(len(out), maxUnexplained)]
}

func explained(st stack, rules []*Rule, scans map[string]bool) bool {
	for _, r := range rules {
		if len(r.frames) > 0 && r.matchAt(st) >= 0 {
			return true
		}
	}
	for _, fn := range st.funcs {
		if scans[frames.DisplayName(fn)] {
			return true
		}
	}
	return false
}

func joinPath(p []string) string {
	out := ""
	for i, s := range p {
		if i > 0 {
			out += " → "
		}
		out += s
	}
	return out
}
