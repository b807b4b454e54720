package analyzers

import (
	"sort"
	"strings"

	"github.com/dustin/go-humanize"

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
				if r.ID == f.Rule && (r.Detector == "full-scan" || r.Detector == "per-message") {
					scans[f.OwnFrame] = true
				}
			}
		}
	}
	weight := map[string]int64{}
	paths := map[string]map[string]int64{}
	pathOf := map[string][]string{}
	elided := map[string]int{}
	calls := map[string]*calleeTally{}
	for _, st := range s.cpu {
		if s.stopped() {
			return nil
		}
		if explained(st, rules, scans) {
			continue
		}
		k := innermostOwn(st)
		if k < 0 {
			continue
		}
		fn := frames.DisplayName(st.funcs[k])
		own, hidden := ownPath(st)
		weight[fn] += st.value
		if calls[fn] == nil {
			calls[fn] = newCalleeTally()
			calls[fn].ownFns = []string{fn}
		}
		calls[fn].add(st, k)
		if paths[fn] == nil {
			paths[fn] = map[string]int64{}
		}
		key := joinPath(own)
		paths[fn][key] += st.value
		pathOf[key], elided[key] = own, hidden
	}
	var out []Unexplained
	for fn, w := range weight {
		if sh := share(w, s.cpuTotal); sh >= minUnexplained && w >= minCPUEvidence {
			key := heaviestKey(paths[fn])
			u := Unexplained{Function: fn, Path: pathOf[key], Elided: elided[key], CPUShare: sh, Callees: calls[fn].top(s.cpuTotal),
				OwnShare: share(calls[fn].ownLeaf, s.cpuTotal)}
			if phrase := calls[fn].known(s.cpuTotal, w); phrase != "" {
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

// pathEdge is how many own frames a path shows at each end: a deeper
// path says how many it leaves out between them.
const pathEdge = 32

// ownPath is st's own frames from the outermost to the innermost, at most
// pathEdge of each end with one entry between them saying how many are
// left out ("… 999,936 frames …"), and how many that is; nil when st has
// no own frame to show.
func ownPath(st stack) ([]string, int) {
	var outer, inner []string // inner: the last pathEdge frames seen
	hidden, closed := 0, false
	for k := len(st.funcs) - 1; k >= 0; k-- {
		if k == edgeFrames-1 && st.elidedOwn > 0 { // the stack's elided middle lies here
			hidden += st.elidedOwn
			closed = true
		}
		if st.kinds[k] != frames.Own {
			continue
		}
		name := frames.DisplayName(st.funcs[k])
		switch {
		case !closed && len(outer) < pathEdge:
			outer = append(outer, name)
		case len(inner) < pathEdge:
			closed = true
			inner = append(inner, name)
		default:
			copy(inner, inner[1:])
			inner[pathEdge-1] = name
			hidden++
		}
	}
	if len(outer)+len(inner) == 0 {
		return nil, 0
	}
	if hidden > 0 {
		outer = append(outer, elisionNote(hidden))
	}
	return append(outer, inner...), hidden
}

// elisionNote stands for n frames a path leaves out.
func elisionNote(n int) string { return "… " + humanize.Comma(int64(n)) + " frames …" }

// joinPath is a path's frames joined with arrows.
func joinPath(p []string) string { return strings.Join(p, " → ") }
