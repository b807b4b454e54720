package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Figures worked by hand: relative deviations from each group's mean,
// pooled over the values less one per group.
func TestPooledSpreadAgainstKnownValues(t *testing.T) {
	s := PooledSpread([][]float64{{1, 3}, {10, 10, 13}})
	if s.DF != 3 || !near(s.RelSD, math.Sqrt((0.5+6.0/121)/3)) || !s.Measured() {
		t.Errorf("%+v, want df 3 and relative sd %.5f", s, math.Sqrt((0.5+6.0/121)/3))
	}
	// A value that is no number, a lone one and a group at 0 add nothing.
	s = PooledSpread([][]float64{{1, 3, math.NaN(), math.Inf(1)}, {7}, {0, 0}})
	if s.DF != 1 || !near(s.RelSD, math.Sqrt(0.5)) || s.Measured() {
		t.Errorf("left out: %+v", s)
	}
	if s := PooledSpread([][]float64{{5}, {6}}); s.DF != 0 || s.RelSD != 0 {
		t.Errorf("no group of two: %+v", s)
	}
}

func TestEffectiveN(t *testing.T) {
	for _, tc := range []struct {
		w    []float64
		want float64
	}{{[]float64{1, 1, 1, 1}, 4}, {[]float64{3, 1}, 1.6}, {[]float64{5, 0, -1}, 1}, {nil, 0}} {
		if got := EffectiveN(tc.w); !near(got, tc.want) {
			t.Errorf("EffectiveN(%v) = %v, want %v", tc.w, got, tc.want)
		}
	}
}

// t(0.995, 3) is 5.8409: the margin of two means of 2 and 6 measurements
// at a 10% spread.
func TestMarginAgainstKnownValue(t *testing.T) {
	m, ok := Spread{RelSD: 0.1, DF: 3}.Margin(0.99, 2, 6)
	if !ok || math.Abs(m-5.84091*0.1*math.Sqrt(0.5+1.0/6)) > 1e-4 {
		t.Errorf("margin %v %v", m, ok)
	}
	if _, ok := (Spread{RelSD: 0.1, DF: 1}).Margin(0.99, 2, 6); ok {
		t.Error("a margin from one degree of freedom")
	}
	if _, ok := (Spread{RelSD: 0.1, DF: 5}).Margin(0.99, 0, 6); ok {
		t.Error("a margin for a side with no measurement")
	}
}

// Groups drawn from one distribution (a 15% spread, a few measurements
// each, as an experiment's seconds are): the spread is measured near 15%,
// and two groups' means differ by more than the 99% margin about 1% of
// the time, not 5% and not never.
func TestMarginCoversTheNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const trials, sd = 4000, 0.15
	sizes := []int{3, 3, 3, 2}
	beyond := 0
	var sds []float64
	for range trials {
		values := make([][]float64, len(sizes))
		for g, n := range sizes {
			for range n {
				values[g] = append(values[g], 10*(1+sd*r.NormFloat64()))
			}
		}
		s := PooledSpread(values)
		sds = append(sds, s.RelSD)
		m, ok := s.Margin(0.99, float64(sizes[0]), float64(sizes[3]))
		if !ok {
			t.Fatalf("no margin from %+v", s)
		}
		if math.Abs(mean(values[3])/mean(values[0])-1) > m {
			beyond++
		}
	}
	if got := mean(sds); math.Abs(got-sd) > 0.02 {
		t.Errorf("mean measured spread %.3f, want near %.2f", got, sd)
	}
	if rate := float64(beyond) / trials; rate < 0.002 || rate > 0.03 {
		t.Errorf("%.3f of the same-distribution pairs beyond the 99%% margin, want about 0.01", rate)
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

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
		short, _ := fit.Margin(0.99, turns, turns-1)
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
