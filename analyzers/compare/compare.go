package compare

import (
	"math"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/stats"
)

// Metric is one figure compared between two versions.
type Metric struct {
	Name         string
	HigherBetter bool
}

// RunFigures is one run of one microload as a comparison sees it.
type RunFigures struct {
	Values   map[string]float64 // by metric name; absent, NaN or ±Inf: the run cannot tell
	Findings []analyzers.Finding
	CPU      *profile.Profile // nil: not profiled
}

// MetricChange is one metric of one microload, before against after.
type MetricChange struct {
	Metric
	stats.Comparison
	N       [2]int
	Verdict string // better, worse or ~
}

// Comparison is what changed in one microload between two sets of runs.
type Comparison struct {
	Microload string
	Runs      int // the fewer of the two sides' runs
	Changes   []MetricChange
	Missing   []string // metrics that one side has and the other cannot tell
	Fixed     []RuleChange
	Regressed []RuleChange
	Gainers   []FuncDelta // cumulative CPU share grew
	Losers    []FuncDelta // cumulative CPU share shrank
	// Before and After are each side's CPU profiles merged; nil when a side
	// was not profiled.
	Before, After *profile.Profile
}

// Compare tests each metric (medians, intervals, Mann-Whitney U), lists
// the findings that came or went, and where the CPU moved.
func Compare(microload string, metrics []Metric, before, after []RunFigures) Comparison {
	c := Comparison{Microload: microload, Runs: min(len(before), len(after))}
	for _, m := range metrics {
		bv, av := values(before, m.Name), values(after, m.Name)
		if len(bv) == 0 || len(av) == 0 {
			if len(bv)+len(av) > 0 {
				c.Missing = append(c.Missing, m.Name)
			}
			continue
		}
		sc := stats.Compare(bv, av)
		ch := MetricChange{Metric: m, Comparison: sc, N: [2]int{len(bv), len(av)}, Verdict: "~"}
		if sc.Significant && sc.Ratio != 1 {
			ch.Verdict = "worse"
			if (sc.Ratio > 1) == m.HigherBetter {
				ch.Verdict = "better"
			}
		}
		c.Changes = append(c.Changes, ch)
	}
	var fb, fa [][]analyzers.Finding
	for _, r := range before {
		fb = append(fb, r.Findings)
	}
	for _, r := range after {
		fa = append(fa, r.Findings)
	}
	c.Fixed, c.Regressed = FindingChanges(microload, fb, fa)
	c.Before, c.After = mergeCPU(before), mergeCPU(after)
	if c.Before != nil && c.After != nil {
		c.Gainers, c.Losers = HotPathDelta(c.Before, c.After, "cpu", 8)
	}
	return c
}

// Geomeans are, per metric, the geometric mean of the after/before ratios
// over the microloads.
func Geomeans(cs []Comparison) map[string]float64 {
	ratios := map[string][]float64{}
	for _, c := range cs {
		for _, ch := range c.Changes {
			ratios[ch.Name] = append(ratios[ch.Name], ch.Ratio)
		}
	}
	out := map[string]float64{}
	for name, rs := range ratios {
		if g := stats.Geomean(rs); !math.IsNaN(g) {
			out[name] = g
		}
	}
	return out
}

func values(runs []RunFigures, metric string) []float64 {
	var out []float64
	for _, r := range runs {
		if v, ok := r.Values[metric]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

func mergeCPU(runs []RunFigures) *profile.Profile {
	var ps []*profile.Profile
	for _, r := range runs {
		if r.CPU != nil {
			ps = append(ps, r.CPU)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	merged, err := profile.Merge(ps)
	if err != nil {
		return ps[0]
	}
	return merged
}
