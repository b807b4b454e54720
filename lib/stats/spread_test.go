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
