package pipeline

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// cpuSharePrefix names a function's CPU share as a compared metric.
const cpuSharePrefix = "cpu% "

// compareFunctions is how many functions a production compare tests in
// each of three ways: the largest cumulative shares of either side (where
// the time goes), the largest flat shares (the leaves doing the work,
// which a chain of wrappers would crowd out of the first list), and the
// merged profiles' largest moves, up and down (where a deploy moved the
// work, when that is not where most of it is).
const compareFunctions = 6

// compared are the functions a compare tests. Those chosen by their move
// are chosen on the merged profiles, while the test is on the windows:
// a move that one noisy window made does not separate the windows, and
// Holm's correction covers all the functions chosen (an A/A comparison
// still reads as noise: TestCompareProductionAAIsNoise).
func compared(before, after *profile.Profile) []string {
	flat, cum := map[string]float64{}, map[string]float64{}
	var cums [2]map[string]float64
	for i, p := range []*profile.Profile{before, after} {
		f, c := shares(p)
		cums[i] = c
		for fn, v := range c {
			if v < 100 { // every stack's root says nothing
				cum[fn] = math.Max(cum[fn], v)
			}
			flat[fn] = math.Max(flat[fn], f[fn])
		}
	}
	gainers, losers := analyzers.HotPathDelta(before, after, "cpu", math.MaxInt32)
	up, down := map[string]float64{}, map[string]float64{}
	for _, d := range gainers {
		up[d.Function] = d.Change()
	}
	for _, d := range losers {
		down[d.Function] = -d.Change()
	}
	// A chain of wrappers carries the same samples under several names:
	// a function whose shares on both sides are within a tenth of a point
	// of one chosen already is that work again, and would crowd out the
	// rest.
	var chosen []string
	same := func(fn string) bool {
		for _, c := range chosen {
			if math.Abs(cums[0][fn]-cums[0][c]) < 0.1 && math.Abs(cums[1][fn]-cums[1][c]) < 0.1 {
				return true
			}
		}
		return false
	}
	for _, by := range []struct {
		shares map[string]float64
		n      int
	}{{cum, compareFunctions}, {flat, compareFunctions}, {up, compareFunctions / 2}, {down, compareFunctions / 2}} {
		taken := 0
		for _, fn := range largest(by.shares, len(by.shares)) {
			if taken == by.n {
				break
			}
			if !same(fn) {
				chosen = append(chosen, fn)
				taken++
			}
		}
	}
	return chosen
}

// largest are the n keys of m with the largest values, ties by name.
func largest(m map[string]float64, n int) []string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys[:min(n, len(keys))]
}

// CompareProduction is probe compare --from: each side's windows are the
// samples; the metrics are the CPU shares (cumulative, in %) of the
// functions that take most of either side (compared), each tested with Mann-Whitney
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
			textline.Names(analyzers.ValueTypes(mb), 60), textline.Names(analyzers.ValueTypes(ma), 60))
	}
	fns := compared(mb, ma)
	wb, wa := windowFigures(before, fns), windowFigures(after, fns)
	fns = slices.DeleteFunc(fns, func(fn string) bool { return allZero(wb, fn) && allZero(wa, fn) })
	metrics := make([]analyzers.Metric, len(fns))
	for i, fn := range fns {
		metrics[i] = analyzers.Metric{Name: cpuSharePrefix + fn}
	}
	c := analyzers.Compare(service, metrics, wb, wa)
	holm(c.Changes)
	files := map[string][]byte{}
	diffFlame(files, beforeName, afterName, c)
	var ws []probes.Warning
	for _, w := range warnings {
		ws = append(ws, probes.Warning{Kind: "empty-windows", Message: w})
	}
	ab := report.NewAB(beforeName, afterName, []analyzers.Comparison{c}, nil, files, nil, ws)
	// A geometric mean of functions' share ratios says nothing.
	ab.Geomean = map[string]float64{}
	return ab, nil
}

// allZero: no window shows fn (each under the half-point floor), though
// the merged side did.
func allZero(ws []analyzers.RunFigures, fn string) bool {
	for _, w := range ws {
		if w.Values[cpuSharePrefix+fn] != 0 {
			return false
		}
	}
	return true
}

// windowFigures are the windows as a comparison's runs: each function's
// cumulative CPU share, in %, 0 where the window shows none of it.
func windowFigures(windows []*profile.Profile, fns []string) []analyzers.RunFigures {
	out := make([]analyzers.RunFigures, len(windows))
	for i, w := range windows {
		_, shares := shares(w)
		values := map[string]float64{}
		for _, fn := range fns {
			values[cpuSharePrefix+fn] = shares[fn]
		}
		out[i] = analyzers.RunFigures{Values: values, CPU: w}
	}
	return out
}

// shares are the functions' flat and cumulative CPU shares of p in %:
// the analyzers' hot-path delta against an empty profile (functions under
// its half-point floor are left out).
func shares(p *profile.Profile) (flat, cum map[string]float64) {
	empty := &profile.Profile{SampleType: p.SampleType, PeriodType: p.PeriodType, Period: p.Period}
	gainers, _ := analyzers.HotPathDelta(empty, p, "cpu", math.MaxInt32)
	flat, cum = map[string]float64{}, map[string]float64{}
	for _, g := range gainers {
		flat[g.Function], cum[g.Function] = 100*g.FlatAfter, 100*g.CumAfter
	}
	return flat, cum
}

// holm applies Holm's step-down correction to the changes' p-values:
// with up to eighteen functions tested at 5 % each, one in two A/A comparisons
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
