// Package stats compares two sets of measurements the way benchstat does:
// medians with 95% confidence intervals and a Mann-Whitney U test, from
// golang.org/x/perf/benchmath, plus the ratio of the two medians with an
// interval and the geometric mean of ratios. It does no I/O.
package stats

import (
	"math"

	"golang.org/x/perf/benchmath"
)

// Alpha is the significance level: p below it is a change, above it "~".
const Alpha = 0.05

// Summary is one side's median and its 95% confidence interval (±Inf
// when there are too few values for one).
type Summary struct {
	Median float64
	Lo, Hi float64
	N      int
}

// Summarise is the median and its distribution-free confidence interval.
func Summarise(values []float64) Summary {
	if len(values) == 0 {
		return Summary{Median: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1)}
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(append([]float64{}, values...), &benchmath.DefaultThresholds), 0.95)
	return Summary{Median: s.Center, Lo: s.Lo, Hi: s.Hi, N: len(values)}
}

// Comparison of one metric, before against after.
type Comparison struct {
	Before, After Summary
	Ratio         float64    // after/before medians
	CI95          [2]float64 // of the ratio: the after interval over the before one, so conservative
	P             float64    // Mann-Whitney U, two-sided; NaN when not tested
	Significant   bool
	Note          string // why nothing can be claimed, when that is so
}

// Compare tests whether before and after differ.
func Compare(before, after []float64) Comparison {
	c := Comparison{Before: Summarise(before), After: Summarise(after), P: math.NaN()}
	c.Ratio = c.After.Median / c.Before.Median
	c.CI95 = [2]float64{c.After.Lo / c.Before.Hi, c.After.Hi / c.Before.Lo}
	if c.Before.Lo <= 0 { // an interval reaching zero bounds no ratio
		c.CI95[1] = math.Inf(1)
	}
	if len(before) < 2 || len(after) < 2 {
		c.Note = "single runs: no significance is claimed"
		return c
	}
	t := benchmath.DefaultThresholds
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(append([]float64{}, before...), &t),
		benchmath.NewSample(append([]float64{}, after...), &t))
	c.P = cmp.P
	c.Significant = cmp.P <= Alpha
	if len(cmp.Warnings) > 0 {
		c.Note = cmp.Warnings[0].Error()
	}
	return c
}

// Geomean is the geometric mean of positive ratios; others are skipped.
func Geomean(ratios []float64) float64 {
	sum, n := 0.0, 0
	for _, r := range ratios {
		if r > 0 && !math.IsInf(r, 0) && !math.IsNaN(r) {
			sum += math.Log(r)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Exp(sum / float64(n))
}
