package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Blocked is a two-way fit of measurements taken in blocks (an
// experiment's turns, each group measured once or more in each): each
// group's level and each block's, a block in which the machine ran slow
// slowing every group alike. The model is additive in logs (a slow block
// multiplies every group's figure), fitted by least squares, which
// handles a missing measurement.
type Blocked struct {
	// Spread is the noise, in logs, left when the blocks' levels are taken
	// out as well as the groups': its degrees of freedom are the values
	// less one per group and per block plus one per connected set of them.
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
	// cov is the covariance of the log levels of the groups connected to
	// group 0, in units of the spread's variance; in are their indexes.
	cov *mat.Dense
	in  []int
}

// blocksTestLevel is the chance below which the blocks' levels count as
// real: a preliminary test keeps a term at 25%, erring toward keeping it.
const blocksTestLevel = 0.25

type blockedCell struct {
	g, b int
	y    float64
}

// BlockedFit fits values[g][k], measured in block blocks[g][k]. A value
// that is no positive finite number (a second without the work) adds
// nothing: its log is not a measurement.
func BlockedFit(values [][]float64, blocks [][]int) Blocked {
	var cells []blockedCell
	blockIndex := map[int]int{}
	for g, vs := range values {
		for k, x := range vs {
			if g >= len(blocks) || k >= len(blocks[g]) || !(x > 0) || math.IsInf(x, 1) {
				continue
			}
			b, ok := blockIndex[blocks[g][k]]
			if !ok {
				b = len(blockIndex)
				blockIndex[blocks[g][k]] = b
			}
			cells = append(cells, blockedCell{g, b, math.Log(x)})
		}
	}
	fit := Blocked{Level: make([]float64, len(values))}
	var ss, ssGroups float64
	df, dfGroups := 0, 0
	for _, set := range connectedSets(len(values), cells) {
		r := fitSet(set)
		ss, df = ss+r.ss, df+r.df
		ssGroups, dfGroups = ssGroups+r.ssGroups, dfGroups+r.dfGroups
		if r.levels != nil && r.groups[0] == 0 { // the set of group 0
			for j, g := range r.groups {
				fit.Level[g] = math.Exp(r.levels[j] - r.levels[0])
			}
			fit.cov, fit.in = r.cov, r.groups
		}
	}
	if df <= 0 {
		return fit
	}
	fit.Spread = Spread{RelSD: math.Sqrt(ss / float64(df)), DF: df}
	if extra := dfGroups - df; extra > 0 && ss > 0 {
		f := (ssGroups - ss) / float64(extra) / (ss / float64(df))
		fit.BlocksMatter = distuv.F{D1: float64(extra), D2: float64(df)}.Survival(f) < blocksTestLevel
	} else if extra > 0 {
		fit.BlocksMatter = ssGroups > 0 // the blocks fit exactly
	}
	return fit
}

// Factor is the variance of Σ c[g]·log(level of g), a contrast (its
// weights sum to 0: a group against others), in units of the spread's
// variance (the margin's √(1/n₁ + 1/n₂) squared, exact for seconds
// missing); NaN when c is no contrast or weighs a group not connected to
// group 0.
func (b Blocked) Factor(c []float64) float64 {
	var sum float64
	for _, w := range c {
		sum += w
	}
	if b.cov == nil || math.Abs(sum) > 1e-9 {
		return math.NaN()
	}
	at := make(map[int]int, len(b.in))
	for j, g := range b.in {
		at[g] = j
	}
	v := mat.NewVecDense(len(b.in), nil)
	for g, w := range c {
		if w == 0 {
			continue
		}
		j, ok := at[g]
		if !ok {
			return math.NaN()
		}
		v.SetVec(j, w)
	}
	return mat.Inner(v, b.cov, v)
}

// setFit is one connected set's least-squares fit.
type setFit struct {
	groups   []int     // the set's groups, ascending
	levels   []float64 // their log levels, block 0's level taken as 0
	cov      *mat.Dense
	ss       float64 // residual sum of squares, blocks in
	df       int
	ssGroups float64 // the same cells fitted by their groups alone
	dfGroups int
}

// fitSet fits one connected set: a group's effect and a block's (the
// first block's fixed at 0), the normal equations solved exactly.
func fitSet(cells []blockedCell) setFit {
	groupAt, blockAt := map[int]int{}, map[int]int{}
	var r setFit
	for _, c := range cells {
		if _, ok := groupAt[c.g]; !ok {
			groupAt[c.g] = 0
			r.groups = append(r.groups, c.g)
		}
		if _, ok := blockAt[c.b]; !ok {
			blockAt[c.b] = len(blockAt)
		}
	}
	slices.Sort(r.groups)
	for j, g := range r.groups {
		groupAt[g] = j
	}
	nG, nB := len(r.groups), len(blockAt)
	p := nG + nB - 1
	r.df, r.dfGroups = len(cells)-p, len(cells)-nG
	x, y := mat.NewDense(len(cells), p, nil), mat.NewVecDense(len(cells), nil)
	sum, n := make([]float64, nG), make([]float64, nG)
	for i, c := range cells {
		x.Set(i, groupAt[c.g], 1)
		if b := blockAt[c.b]; b > 0 {
			x.Set(i, nG+b-1, 1)
		}
		y.SetVec(i, c.y)
		sum[groupAt[c.g]] += c.y
		n[groupAt[c.g]]++
	}
	for _, c := range cells {
		d := c.y - sum[groupAt[c.g]]/n[groupAt[c.g]]
		r.ssGroups += d * d
	}
	var xtx mat.SymDense
	xtx.SymOuterK(1, x.T())
	var chol mat.Cholesky
	if !chol.Factorize(&xtx) {
		r.ss, r.df, r.ssGroups, r.dfGroups = 0, 0, 0, 0 // cannot happen for a connected set
		return r
	}
	var xty, theta mat.VecDense
	xty.MulVec(x.T(), y)
	if err := chol.SolveVecTo(&theta, &xty); err != nil {
		r.ss, r.df, r.ssGroups, r.dfGroups = 0, 0, 0, 0
		return r
	}
	var fitted mat.VecDense
	fitted.MulVec(x, &theta)
	for i := range len(cells) {
		d := y.AtVec(i) - fitted.AtVec(i)
		r.ss += d * d
	}
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		return r
	}
	r.levels = make([]float64, nG)
	r.cov = mat.NewDense(nG, nG, nil)
	for j := range nG {
		r.levels[j] = theta.AtVec(j)
		for k := range nG {
			r.cov.Set(j, k, inv.At(j, k))
		}
	}
	return r
}

// connectedSets splits the cells into sets that share no group and no
// block: each is fitted on its own.
func connectedSets(groups int, cells []blockedCell) [][]blockedCell {
	blocks := 0
	for _, c := range cells {
		blocks = max(blocks, c.b+1)
	}
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
	for _, c := range cells {
		parent[find(c.g)] = find(groups + c.b)
	}
	index := map[int]int{}
	var sets [][]blockedCell
	for _, c := range cells {
		root := find(c.g)
		i, ok := index[root]
		if !ok {
			i = len(sets)
			index[root] = i
			sets = append(sets, nil)
		}
		sets[i] = append(sets[i], c)
	}
	return sets
}
