package analyzers

import (
	"sort"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

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
		ss, total := stacks(w, "cpu", frames.Code{})
		parts := map[string]int64{}
		for _, s := range ss {
			work := "other"
			for j := range rules {
				if len(rules[j].frames) > 0 && !isMarker(rules[j].Class) && rules[j].matchAt(s) >= 0 {
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
