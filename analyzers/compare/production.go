package compare

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/lib/textline"
)

// CPUSharePrefix names a function's CPU share as a compared metric.
const CPUSharePrefix = "cpu% "

// compareFunctions is how many functions a production compare tests in
// each of three ways: the largest cumulative shares of either side (where
// the time goes), the largest flat shares (the leaves doing the work,
// which a chain of wrappers would crowd out of the first list), and the
// merged profiles' largest moves, up and down (where a deploy moved the
// work, when that is not where most of it is).
//
// The moves are the program's own (its code, the standard library's, its
// modules'), plus the runtime's one largest each way: when a deploy stops
// allocating, the collector's and allocator's fall follows from it and is
// larger than the work that caused it (a search's document loads fell
// 20 points while GC assist fell 22 and mallocgc 20, and filled all
// three places), so the runtime gets one place and the program keeps its
// three.
const compareFunctions = 6

// compared are the functions a compare tests. Those chosen by their move
// are chosen on the merged profiles, while the test is on the windows:
// a move that one noisy window made does not separate the windows, and
// Holm's correction covers all the functions chosen (an A/A comparison
// still reads as noise: TestCompareProductionAAIsNoise).
func compared(before, after *Side) []string {
	flat, cum := map[string]float64{}, map[string]float64{}
	var cums [2]map[string]float64
	for i, side := range []*Side{before, after} {
		f, c := side.shares()
		cums[i] = c
		for fn, v := range c {
			if v < 100 { // every stack's root says nothing
				cum[fn] = math.Max(cum[fn], v)
			}
			flat[fn] = math.Max(flat[fn], f[fn])
		}
	}
	gainers, losers := hotPathDelta(before, after, math.MaxInt32)
	up, down := map[string]float64{}, map[string]float64{}
	runtimeUp, runtimeDown := map[string]float64{}, map[string]float64{}
	for _, d := range gainers {
		byOwner(d.Function, up, runtimeUp)[d.Function] = d.Change()
	}
	for _, d := range losers {
		byOwner(d.Function, down, runtimeDown)[d.Function] = -d.Change()
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
	}{
		{cum, compareFunctions}, {flat, compareFunctions},
		{up, compareFunctions / 2}, {down, compareFunctions / 2}, {runtimeUp, 1}, {runtimeDown, 1},
	} {
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

// byOwner picks the map a function's move goes in: the runtime's (its
// package is runtime or internal/runtime) or the program's.
func byOwner(fn string, program, runtime map[string]float64) map[string]float64 {
	if frames.Kind(fn, "") == frames.Runtime {
		return runtime
	}
	return program
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

// Side is one side of a production compare, each window reduced
// as it comes to what the comparison needs, its profile dropped: the
// window's functions' cumulative CPU shares (those of half a point or
// more: the test's samples), the side's flat and cumulative CPU by
// function (summed over the windows: which functions are tested and
// where the CPU moved), and the windows merged for the differential
// flame graph while that stays within the samples one profile may hold.
// Twenty-four windows of a million samples each held 4 GB at once.
type Side struct {
	maxSamples int64
	windows    []map[string]float64 // each window's cumulative shares, in %
	flat, cum  map[string]float64   // CPU (ns) by function, all windows
	total      float64
	merged     *profile.Profile // nil: none yet, or over maxSamples
	tooMany    bool             // the windows merged held over maxSamples
}

// NewSide is an empty side whose merged windows may hold up to
// maxSamples samples (pprofio.MaxEntries of --max-profile).
func NewSide(maxSamples int64) *Side {
	return &Side{maxSamples: maxSamples, flat: map[string]float64{}, cum: map[string]float64{}}
}

// Add reduces one window's CPU profile into the side; p is not kept.
func (c *Side) Add(p *profile.Profile) error {
	if !isCPU(p) {
		return fmt.Errorf("compare --from compares CPU profiles (a window's sample types: %s)", textline.Names(analyzers.ValueTypes(p), 60))
	}
	_, cum := shares(p)
	c.windows = append(c.windows, largestOf(cum, 0, keptFunctions))
	flat, cumNs, total := analyzers.FuncTotals(p, "cpu")
	for fn, v := range largestOf(cumNs, keptShare*total, keptFunctions) {
		c.cum[fn] += v
		c.flat[fn] += flat[fn]
	}
	c.total += total
	if c.tooMany {
		return nil
	}
	merged := p
	if c.merged != nil {
		var err error
		if merged, err = profile.Merge([]*profile.Profile{c.merged, p}); err != nil {
			return fmt.Errorf("merging the windows: %v", err)
		}
	}
	c.merged = merged
	if int64(len(merged.Sample)) > c.maxSamples {
		c.merged, c.tooMany = nil, true
	}
	return nil
}

// A window adds to its side's sums the cumulative and flat CPU of its
// keptFunctions largest functions of keptShare of its CPU or more: a
// tenth of the half-point floor of the functions compared, so that a
// function's sum misses at most that in a window, and a profile of a
// million functions of one sample each adds nothing.
const (
	keptShare     = minMove / 10
	keptFunctions = 1000
)

// largestOf is m's n largest values of at least floor (ties by name).
func largestOf(m map[string]float64, floor float64, n int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v >= floor && v > 0 {
			out[k] = v
		}
	}
	if len(out) > n {
		keep := largest(out, n)
		out = make(map[string]float64, n)
		for _, k := range keep {
			out[k] = m[k]
		}
	}
	return out
}

// Windows is how many windows the side holds.
func (c *Side) Windows() int { return len(c.windows) }

// shares are the side's functions' flat and cumulative CPU shares in %,
// those of a cumulative share of half a point or more (as shares).
func (c *Side) shares() (flat, cum map[string]float64) {
	flat, cum = map[string]float64{}, map[string]float64{}
	if c.total == 0 {
		return flat, cum
	}
	for fn, v := range c.cum {
		if v/c.total >= minMove {
			flat[fn], cum[fn] = 100*c.flat[fn]/c.total, 100*v/c.total
		}
	}
	return flat, cum
}

// minMove is HotPathDelta's floor: half a point.
const minMove = 0.005

// hotPathDelta is HotPathDelta on two sides' sums.
func hotPathDelta(before, after *Side, n int) (gainers, losers []FuncDelta) {
	frac := func(m map[string]float64, total float64) map[string]float64 {
		out := make(map[string]float64, len(m))
		for fn, v := range m {
			if total > 0 {
				out[fn] = v / total
			}
		}
		return out
	}
	return HotPathDeltaOf(frac(before.flat, before.total), frac(before.cum, before.total),
		frac(after.flat, after.total), frac(after.cum, after.total), n)
}

// allZero: no window shows fn (each under the half-point floor), though
// the merged side did.
func allZero(ws []RunFigures, fn string) bool {
	for _, w := range ws {
		if w.Values[CPUSharePrefix+fn] != 0 {
			return false
		}
	}
	return true
}

// windowFigures are the windows as a comparison's runs: each function's
// cumulative CPU share, in %, 0 where the window shows none of it.
func windowFigures(windows []map[string]float64, fns []string) []RunFigures {
	out := make([]RunFigures, len(windows))
	for i, shares := range windows {
		values := map[string]float64{}
		for _, fn := range fns {
			values[CPUSharePrefix+fn] = shares[fn]
		}
		out[i] = RunFigures{Values: values}
	}
	return out
}

// shares are the functions' flat and cumulative CPU shares of p in %:
// the analyzers' hot-path delta against an empty profile (functions under
// its half-point floor are left out).
func shares(p *profile.Profile) (flat, cum map[string]float64) {
	empty := &profile.Profile{SampleType: p.SampleType, PeriodType: p.PeriodType, Period: p.Period}
	gainers, _ := HotPathDelta(empty, p, "cpu", math.MaxInt32)
	flat, cum = map[string]float64{}, map[string]float64{}
	for _, g := range gainers {
		flat[g.Function], cum[g.Function] = 100*g.FlatAfter, 100*g.CumAfter
	}
	return flat, cum
}

// holm applies Holm's step-down correction to the changes' p-values:
// with up to twenty functions tested at 5 % each, one in two A/A comparisons
// would otherwise show a "significant" move.
func holm(changes []MetricChange) {
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

// isCPU says whether p is a CPU profile: a cpu sample type before any
// allocation one (as the pipeline's profile kinds read it).
func isCPU(p *profile.Profile) bool {
	for _, st := range p.SampleType {
		switch st.Type {
		case "cpu":
			return true
		case "alloc_space":
			return false
		}
	}
	return false
}

// Production is the comparison of two sides' windows (probe compare
// --from): the metrics are the CPU shares (cumulative, in %) of the
// functions that take most of either side (compared), each tested with
// Mann-Whitney U across the windows (Compare) and held to Holm's
// correction for testing that many at once, so an A/A comparison reads as
// noise; the merged windows and where the CPU moved.
func Production(service string, before, after *Side) Comparison {
	fns := compared(before, after)
	wb, wa := windowFigures(before.windows, fns), windowFigures(after.windows, fns)
	fns = slices.DeleteFunc(fns, func(fn string) bool { return allZero(wb, fn) && allZero(wa, fn) })
	metrics := make([]Metric, len(fns))
	for i, fn := range fns {
		metrics[i] = Metric{Name: CPUSharePrefix + fn}
	}
	c := Compare(service, metrics, wb, wa)
	c.Before, c.After = before.merged, after.merged
	c.Gainers, c.Losers = hotPathDelta(before, after, 8)
	holm(c.Changes)
	return c
}

// TooMany says whether the side's windows merged held over its samples'
// bound: no merged profile, no differential flame graph.
func (c *Side) TooMany() bool { return c.tooMany }

// MaxSamples is the samples the side's merged windows may hold.
func (c *Side) MaxSamples() int64 { return c.maxSamples }
