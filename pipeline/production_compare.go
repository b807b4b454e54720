package pipeline

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// cpuSharePrefix names a function's CPU share as a compared metric.
const cpuSharePrefix = "cpu% "

// compareFunctions is how many functions a production compare tests: the
// largest cumulative shares of either side.
const compareFunctions = 15

// CompareProduction is probe compare --from: each side's windows are the
// samples; the metrics are the CPU shares (cumulative, in %) of the
// functions that take most of either side, each tested with Mann-Whitney
// U across the windows (analyzers.Compare) and held to Holm's correction
// for testing that many at once, so an A/A comparison reads as noise.
// The report is probe compare's, with the differential flame graph.
func CompareProduction(service, beforeName, afterName string, before, after []*profile.Profile, warnings []string) (*report.AB, error) {
	mb, err := profile.Merge(before)
	if err != nil {
		return nil, fmt.Errorf("merging the before windows: %v", err)
	}
	ma, err := profile.Merge(after)
	if err != nil {
		return nil, fmt.Errorf("merging the after windows: %v", err)
	}
	if profileKind(mb) != "cpu" || profileKind(ma) != "cpu" {
		return nil, fmt.Errorf("compare --from compares CPU profiles (sample types: %s against %s)",
			strings.Join(analyzers.ValueTypes(mb), ", "), strings.Join(analyzers.ValueTypes(ma), ", "))
	}
	fb, fa := cumShares(mb), cumShares(ma)
	names := map[string]float64{}
	for fn, v := range fb {
		names[fn] = v
	}
	for fn, v := range fa {
		names[fn] = math.Max(names[fn], v)
	}
	var fns []string
	for fn, v := range names {
		if v < 100 { // every stack's root says nothing
			fns = append(fns, fn)
		}
	}
	sort.Slice(fns, func(i, j int) bool {
		if names[fns[i]] != names[fns[j]] {
			return names[fns[i]] > names[fns[j]]
		}
		return fns[i] < fns[j]
	})
	fns = fns[:min(compareFunctions, len(fns))]
	metrics := make([]analyzers.Metric, len(fns))
	for i, fn := range fns {
		metrics[i] = analyzers.Metric{Name: cpuSharePrefix + fn}
	}
	c := analyzers.Compare(service, metrics, windowFigures(before, fns), windowFigures(after, fns))
	holm(c.Changes)
	files := map[string][]byte{}
	diffFlame(files, beforeName, afterName, c)
	var ws []probes.Warning
	for _, w := range warnings {
		ws = append(ws, probes.Warning{Kind: "empty-windows", Message: w})
	}
	return report.NewAB(beforeName, afterName, []analyzers.Comparison{c}, nil, files, nil, ws), nil
}

// windowFigures are the windows as a comparison's runs: each function's
// cumulative CPU share, in %, 0 where the window shows none of it.
func windowFigures(windows []*profile.Profile, fns []string) []analyzers.RunFigures {
	out := make([]analyzers.RunFigures, len(windows))
	for i, w := range windows {
		shares := cumShares(w)
		values := map[string]float64{}
		for _, fn := range fns {
			values[cpuSharePrefix+fn] = shares[fn]
		}
		out[i] = analyzers.RunFigures{Values: values, CPU: w}
	}
	return out
}

// cumShares are the functions' cumulative CPU shares of p in %: the
// analyzers' hot-path delta against an empty profile (functions under
// its half-point floor are left out).
func cumShares(p *profile.Profile) map[string]float64 {
	empty := &profile.Profile{SampleType: p.SampleType, PeriodType: p.PeriodType, Period: p.Period}
	gainers, _ := analyzers.HotPathDelta(empty, p, "cpu", math.MaxInt32)
	out := map[string]float64{}
	for _, g := range gainers {
		out[g.Function] = 100 * g.CumAfter
	}
	return out
}

// holm applies Holm's step-down correction to the changes' p-values:
// with fifteen functions tested at 5 % each, one in two A/A comparisons
// would otherwise show a "significant" move.
func holm(changes []analyzers.MetricChange) {
	idx := make([]int, 0, len(changes))
	for i, ch := range changes {
		if !math.IsNaN(ch.P) {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool { return changes[idx[a]].P < changes[idx[b]].P })
	holding := true
	for k, i := range idx {
		ch := &changes[i]
		holding = holding && ch.P <= stats.Alpha/float64(len(idx)-k)
		ch.Significant = holding && ch.Significant
		ch.Verdict = "~"
		if ch.Significant && ch.Ratio != 1 {
			ch.Verdict = "worse"
			if (ch.Ratio > 1) == ch.HigherBetter {
				ch.Verdict = "better"
			}
		}
	}
}
