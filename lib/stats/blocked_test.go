package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A table that is exactly a group's level times a block's leaves no
// noise and gives the levels' ratios, a missing cell included; a 2×2
// table leaves its interaction, worked by hand: each residual is a
// quarter of the log contrast. A group that shares no block with group 0
// has no level relative to it.
func TestBlockedFitAgainstKnownValues(t *testing.T) {
	levels, slow := []float64{2, 1, 5}, []float64{1, 1.5, 0.7}
	values, blocks := make([][]float64, 3), make([][]int, 3)
	for g, a := range levels {
		for b, r := range slow {
			if g == 2 && b == 1 {
				continue // missing
			}
			values[g], blocks[g] = append(values[g], a*r), append(blocks[g], 10+b)
		}
	}
	fit := BlockedFit(values, blocks)
	if fit.DF != 8-3-3+1 || fit.RelSD > 1e-9 || !near(fit.Level[0], 1) || !near(fit.Level[1], 0.5) || !near(fit.Level[2], 2.5) {
		t.Errorf("additive table with a cell missing: %+v, want df 3, no spread, levels 1, 0.5, 2.5", fit)
	}
	s := BlockedFit([][]float64{{1, 2}, {3, 4}}, [][]int{{0, 1}, {0, 1}})
	d := math.Log(1) - math.Log(2) - math.Log(3) + math.Log(4)
	if want := math.Sqrt(4 * (d / 4) * (d / 4)); s.DF != 1 || !near(s.RelSD, want) {
		t.Errorf("2×2: %+v, want df 1 and spread %.5f", s, want)
	}
	s = BlockedFit([][]float64{{1, 2}, {2, 4}, {7, 9}, {14, 18}}, [][]int{{0, 1}, {0, 1}, {2, 3}, {2, 3}})
	if s.DF != 8-4-4+2 || s.RelSD > 1e-9 || !near(s.Level[1], 2) || s.Level[2] != 0 || s.Level[3] != 0 {
		t.Errorf("two unconnected additive sets: %+v, want df 2, no spread, levels 1, 2, none, none", s)
	}
	if s := BlockedFit([][]float64{{5, math.NaN()}, {0, 6}}, [][]int{{0, 1}, {0, 1}}); s.DF != 0 || s.Level[1] != 0 {
		t.Errorf("one value each, in no shared block: %+v", s)
	}
}

// Turns in which the machine ran up to 40% slower or faster, every group
// alike, and a 12% noise of each measurement (an experiment's seconds on
// a busy machine), the last group missing the last turn: the groups' own
// spread counts the turns as noise, the blocked fit measures the 12%, and
// the levels of groups of one distribution differ by more than its 99%
// margin about 1% of the time, the one short of a turn too.
func TestBlockedFitTakesOutTheBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const trials, sd, groups, turns = 4000, 0.12, 5, 3
	beyond, beyondShort, matter := 0, 0, 0
	var blocked, pooled []float64
	for range trials {
		values, blocks := make([][]float64, groups), make([][]int, groups)
		for k := range turns {
			slow := math.Exp(0.4 * (2*r.Float64() - 1))
			for g := range groups {
				if g == groups-1 && k == turns-1 {
					continue
				}
				values[g] = append(values[g], 10*slow*math.Exp(sd*r.NormFloat64()))
				blocks[g] = append(blocks[g], k)
			}
		}
		fit := BlockedFit(values, blocks)
		blocked, pooled = append(blocked, fit.RelSD), append(pooled, PooledSpread(values).RelSD)
		if fit.BlocksMatter {
			matter++
		}
		m, ok := fit.Margin(0.99, turns, turns)
		short, _ := fit.MarginOf(0.99, fit.Factor([]float64{-1, 0, 0, 0, 1}))
		if !ok {
			t.Fatalf("no margin from %+v", fit)
		}
		if math.Abs(math.Log(fit.Level[3])) > m {
			beyond++
		}
		if math.Abs(math.Log(fit.Level[groups-1])) > short {
			beyondShort++
		}
	}
	if got := mean(blocked); math.Abs(got-sd) > 0.02 {
		t.Errorf("mean blocked spread %.3f, want near %.2f", got, sd)
	}
	if got := mean(pooled); got < 1.5*sd {
		t.Errorf("mean pooled spread %.3f: the turns should count as noise there", got)
	}
	for _, n := range []int{beyond, beyondShort} {
		if rate := float64(n) / trials; rate < 0.002 || rate > 0.03 {
			t.Errorf("%.3f of the same-distribution levels beyond the 99%% margin, want about 0.01", rate)
		}
	}
	if rate := float64(matter) / trials; rate < 0.8 {
		t.Errorf("turns ±40%% apart mattered in %.2f of the fits, want most", rate)
	}
}

// Without turns of their own, the blocks matter by chance alone: in about
// a quarter of the fits, the test's level.
func TestBlocksMatterByChanceAtTheTestsLevel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const trials = 4000
	matter := 0
	for range trials {
		values, blocks := make([][]float64, 5), make([][]int, 5)
		for k := range 3 {
			for g := range values {
				values[g] = append(values[g], 10*math.Exp(0.12*r.NormFloat64()))
				blocks[g] = append(blocks[g], k)
			}
		}
		if BlockedFit(values, blocks).BlocksMatter {
			matter++
		}
	}
	if rate := float64(matter) / trials; math.Abs(rate-blocksTestLevel) > 0.03 {
		t.Errorf("blocks of no effect mattered in %.3f of the fits, want about %.2f", rate, blocksTestLevel)
	}
}

// A group's level is exact however long the chain of blocks that joins
// it to group 0: each group shares one block with the next.
func TestBlockedFitAlongAChain(t *testing.T) {
	const groups = 150
	values, blocks := make([][]float64, groups), make([][]int, groups)
	for g := range groups {
		level := math.Pow(1.01, float64(g))
		for _, b := range []int{g, g + 1} {
			values[g] = append(values[g], level*(1+0.1*float64(b%3)))
			blocks[g] = append(blocks[g], b)
		}
	}
	fit := BlockedFit(values, blocks)
	if want := math.Pow(1.01, groups-1); !near(fit.Level[groups-1], want) || fit.RelSD > 1e-9 {
		t.Errorf("the chain's last level %v, want %v (spread %v)", fit.Level[groups-1], want, fit.RelSD)
	}
}

// Factor is the variance of a contrast of the levels in units of the
// noise's: 2/turns for two groups of a full table, and, with seconds
// missing, what the levels' own scatter shows over many draws.
func TestBlockedFactorIsTheContrastsVariance(t *testing.T) {
	full := make([][]float64, 5)
	turns := make([][]int, 5)
	for g := range full {
		for k := range 3 {
			full[g], turns[g] = append(full[g], float64(1+g+k)), append(turns[g], k)
		}
	}
	if f := BlockedFit(full, turns).Factor([]float64{-1, 0, 1}); !near(f, 2.0/3) {
		t.Errorf("full table: factor %v, want 2/3", f)
	}
	// same-key short of a turn and another group short of another.
	r := rand.New(rand.NewPCG(7, 8))
	const trials, sd = 6000, 0.1
	missing := map[[2]int]bool{{0, 1}: true, {3, 2}: true}
	var sq, sqPooled, factor, factorPooled float64
	pooled := []float64{-0.5, -0.5, 0, 1} // group 3 against groups 0 and 1 alike
	for range trials {
		values, blocks := make([][]float64, 5), make([][]int, 5)
		for g := range values {
			for k := range 3 {
				if !missing[[2]int{g, k}] {
					values[g] = append(values[g], math.Exp(sd*r.NormFloat64()))
					blocks[g] = append(blocks[g], k)
				}
			}
		}
		fit := BlockedFit(values, blocks)
		d := math.Log(fit.Level[3])
		sq += d * d
		factor = fit.Factor([]float64{-1, 0, 0, 1})
		dp := d - 0.5*math.Log(fit.Level[1])
		sqPooled += dp * dp
		factorPooled = fit.Factor(pooled)
	}
	if got := sqPooled / trials / (sd * sd); math.Abs(got/factorPooled-1) > 0.06 {
		t.Errorf("against two groups: the variance is %.3f noise variances, Factor says %.3f", got, factorPooled)
	}
	if f := BlockedFit(full, turns).Factor([]float64{1, 0}); !math.IsNaN(f) {
		t.Errorf("a weight that is no contrast: factor %v, want NaN", f)
	}
	if got := sq / trials / (sd * sd); math.Abs(got/factor-1) > 0.06 {
		t.Errorf("the level's variance is %.3f noise variances, Factor says %.3f", got, factor)
	}
	if factor <= 2.0/3*1.05 {
		t.Errorf("factor %.3f with two seconds missing: want more than the full table's 2/3", factor)
	}
	if f := BlockedFit([][]float64{{1, 2}, {3, 4}}, [][]int{{0, 1}, {2, 3}}).Factor([]float64{-1, 1}); !math.IsNaN(f) {
		t.Errorf("groups that share no block: factor %v, want NaN", f)
	}
}
