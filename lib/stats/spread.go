package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Spread is the noise of a figure measured several times in each of
// several groups that are compared (a variant's seconds in an experiment):
// one measurement's standard deviation relative to its group's mean,
// pooled over the groups, and its degrees of freedom. It measures what the
// machine did, not what a model of the sampling says it should.
type Spread struct {
	RelSD float64
	DF    int
}

// PooledSpread is the spread of each group's values around the group's
// mean, pooled over the groups: an unbiased estimate of one measurement's
// variance when every measurement has the same, whatever the groups'
// means (a group's mean is its own). A group with a mean of 0 or fewer
// than two finite values adds nothing.
func PooledSpread(groups [][]float64) Spread {
	var ss float64
	var df int
	for _, g := range groups {
		var xs []float64
		var sum float64
		for _, x := range g {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				xs, sum = append(xs, x), sum+x
			}
		}
		if len(xs) < 2 || sum <= 0 {
			continue
		}
		mean := sum / float64(len(xs))
		for _, x := range xs {
			ss += (x/mean - 1) * (x/mean - 1)
		}
		df += len(xs) - 1
	}
	if df == 0 {
		return Spread{}
	}
	return Spread{RelSD: math.Sqrt(ss / float64(df)), DF: df}
}

// Measured: the spread rests on two degrees of freedom or more, enough
// for a margin.
func (s Spread) Measured() bool { return s.DF >= 2 }

// EffectiveN is how many equal measurements a weighted mean of these
// weights is worth: (Σw)²/Σw² (those of 0 or less left out).
func EffectiveN(weights []float64) float64 {
	var sum, sq float64
	for _, w := range weights {
		if w > 0 {
			sum, sq = sum+w, sq+w*w
		}
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / sq
}

// Margin is the largest relative difference of two group means, worth na
// and nb measurements, that the spread explains at the two-sided
// confidence given (Student's t on s.DF degrees of freedom). ok is false
// when the spread was not measured (fewer than two degrees of freedom) or
// a side has no measurement.
func (s Spread) Margin(confidence, na, nb float64) (margin float64, ok bool) {
	if na <= 0 || nb <= 0 {
		return 0, false
	}
	return s.MarginOf(confidence, 1/na+1/nb)
}

// MarginOf is the margin of a difference whose variance is factor times
// one measurement's (Margin's 1/na + 1/nb; a blocked fit's Factor).
func (s Spread) MarginOf(confidence, factor float64) (margin float64, ok bool) {
	if !s.Measured() || !(factor > 0) {
		return 0, false
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(s.DF)}.Quantile(1 - (1-confidence)/2)
	return t * s.RelSD * math.Sqrt(factor), true
}
