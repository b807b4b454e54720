package analyzers

import "github.com/google/pprof/profile"

// CutShare is the share of p's CPU that samples cut at the profiler's
// depth (cutDepth locations, the goroutine's start lost) most likely spent
// under own: such a sample cannot show own, so -focus on own leaves it
// out. Each is given to own in the proportion that whole samples holding
// its outermost kept function ran under own (a recursion inside a call
// own makes — a regexp compiler, a template parser, an encoder — is cut
// on its deep samples only). A cut sample whose outermost function no
// whole sample holds counts for nothing. With callees, a whole sample is
// under own when it holds one of them under it too (the finding's own
// calls, not all own's work).
func CutShare(p *profile.Profile, own string, callees ...string) float64 {
	total := SampleTotal(p, "cpu")
	if !(total > 0) || own == "" {
		return 0
	}
	idx, _ := p.SampleIndexByName("cpu")
	type tally struct{ all, under int64 }
	whole := map[string]*tally{}
	var cut []*profile.Sample
	for _, s := range p.Sample {
		if len(s.Location) >= cutDepth && outermost(s) != "runtime.goexit" {
			cut = append(cut, s)
			continue
		}
		under := holdsFunc(s, own) && (len(callees) == 0 || holdsFunc(s, callees...))
		seen := map[string]bool{}
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function == nil || seen[ln.Function.Name] {
					continue
				}
				seen[ln.Function.Name] = true
				t := whole[ln.Function.Name]
				if t == nil {
					t = &tally{}
					whole[ln.Function.Name] = t
				}
				t.all += s.Value[idx]
				if under {
					t.under += s.Value[idx]
				}
			}
		}
	}
	var share float64
	for _, s := range cut {
		if t := whole[outermost(s)]; t != nil && t.all > 0 && !holdsFunc(s, own) {
			share += float64(s.Value[idx]) * float64(t.under) / float64(t.all)
		}
	}
	return share / total
}

// outermost is the function of a sample's outermost frame ("" when it
// has none).
func outermost(s *profile.Sample) string {
	if len(s.Location) == 0 {
		return ""
	}
	lines := s.Location[len(s.Location)-1].Line
	if len(lines) == 0 || lines[len(lines)-1].Function == nil {
		return ""
	}
	return lines[len(lines)-1].Function.Name
}
