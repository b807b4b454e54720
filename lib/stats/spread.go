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
	if !s.Measured() || na <= 0 || nb <= 0 {
		return 0, false
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(s.DF)}.Quantile(1 - (1-confidence)/2)
	return t * s.RelSD * math.Sqrt(1/na+1/nb), true
}

// Blocked is a two-way fit of measurements taken in blocks (an
// experiment's turns, each group measured once or more in each): each
// group's level and each block's, a block in which the machine ran slow
// slowing every group alike. The model is additive in logs (a slow block
// multiplies every group's figure), fitted by alternating means, which
// handles a missing measurement.
type Blocked struct {
	// Spread is the noise left when the blocks' levels are taken out as
	// well as the groups': its degrees of freedom are the values less one
	// per group and per block plus one per connected set of them.
	Spread
	// Level is each group's level relative to group 0's (0: the group has
	// no value, or shares no block with group 0, directly or through
	// others): the ratio of two groups' figures, their blocks alike.
	Level []float64
	// BlocksMatter: the blocks' levels explain more of the values'
	// spread than chance would (an F test at 25%, the level at which a
	// preliminary test keeps a term, Bancroft 1964). When they do not,
	// each block's level costs a degree of freedom and buys nothing: the
	// groups' own spread, on more of them, is the better estimate.
	BlocksMatter bool
}

// blocksTestLevel is the chance below which the blocks' levels count as
// real: a preliminary test keeps a term at 25%, erring toward keeping it.
const blocksTestLevel = 0.25

// BlockedFit fits values[g][k], measured in block blocks[g][k]. A value
// that is no positive finite number adds nothing.
func BlockedFit(values [][]float64, blocks [][]int) Blocked {
	type cell struct {
		g, b int
		y    float64
	}
	var cells []cell
	blockIndex := map[int]int{}
	for g, vs := range values {
		for k, x := range vs {
			if k >= len(blocks[g]) || !(x > 0) || math.IsInf(x, 1) {
				continue
			}
			b, ok := blockIndex[blocks[g][k]]
			if !ok {
				b = len(blockIndex)
				blockIndex[blocks[g][k]] = b
			}
			cells = append(cells, cell{g, b, math.Log(x)})
		}
	}
	groupEffect, blockEffect := make([]float64, len(values)), make([]float64, len(blockIndex))
	// Each sweep sets every group's effect to its mean residual, then
	// every block's: the least-squares fit is its fixed point.
	sweep := func(effect []float64, of func(cell) int, other func(cell) float64) float64 {
		sum, n := make([]float64, len(effect)), make([]float64, len(effect))
		for _, c := range cells {
			sum[of(c)] += c.y - other(c)
			n[of(c)]++
		}
		moved := 0.0
		for i := range effect {
			if n[i] > 0 {
				moved = math.Max(moved, math.Abs(sum[i]/n[i]-effect[i]))
				effect[i] = sum[i] / n[i]
			}
		}
		return moved
	}
	for range 10000 {
		a := sweep(groupEffect, func(c cell) int { return c.g }, func(c cell) float64 { return blockEffect[c.b] })
		b := sweep(blockEffect, func(c cell) int { return c.b }, func(c cell) float64 { return groupEffect[c.g] })
		if math.Max(a, b) < 1e-12 {
			break
		}
	}
	var ss float64
	pairs := make([][2]int, len(cells))
	for i, c := range cells {
		r := c.y - groupEffect[c.g] - blockEffect[c.b]
		ss += r * r
		pairs[i] = [2]int{c.g, c.b}
	}
	effects, set := fittedEffects(len(values), len(blockIndex), pairs)
	fit := Blocked{Level: make([]float64, len(values))}
	for g := range values {
		if set[g] >= 0 && set[g] == set[0] {
			fit.Level[g] = math.Exp(groupEffect[g] - groupEffect[0])
		}
	}
	df := len(cells) - effects
	if df <= 0 {
		return fit
	}
	fit.Spread = Spread{RelSD: math.Sqrt(ss / float64(df)), DF: df}
	// The same cells fitted by their groups alone, in logs too.
	sum, n := make([]float64, len(values)), make([]float64, len(values))
	for _, c := range cells {
		sum[c.g] += c.y
		n[c.g]++
	}
	var ssGroups float64
	groups := 0
	for _, c := range cells {
		r := c.y - sum[c.g]/n[c.g]
		ssGroups += r * r
	}
	for _, k := range n {
		if k > 0 {
			groups++
		}
	}
	if extra := len(cells) - groups - df; extra > 0 && ss > 0 {
		f := (ssGroups - ss) / float64(extra) / (ss / float64(df))
		fit.BlocksMatter = distuv.F{D1: float64(extra), D2: float64(df)}.Survival(f) < blocksTestLevel
	} else if extra > 0 {
		fit.BlocksMatter = ssGroups > 0 // an exact fit of the blocks
	}
	return fit
}

// fittedEffects is how many effects a two-way additive fit of these
// cells estimates freely: one per group and per block that has a cell,
// less one per connected set of them (each set's level is shared); and
// the set each group is in (-1: it has no cell).
func fittedEffects(groups, blocks int, cells [][2]int) (int, []int) {
	parent := make([]int, groups+blocks)
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	used := make([]bool, groups+blocks)
	for _, c := range cells {
		g, b := c[0], c[1]
		used[g], used[groups+b] = true, true
		parent[find(g)] = find(groups + b)
	}
	n := 0
	for i, u := range used {
		if u {
			n++
			if find(i) == i {
				n--
			}
		}
	}
	set := make([]int, groups)
	for g := range set {
		set[g] = -1
		if used[g] {
			set[g] = find(g)
		}
	}
	return n, set
}
