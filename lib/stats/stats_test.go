package stats

import (
	"fmt"
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// Known values: for two samples of six with no overlap, the exact
// two-sided Mann-Whitney p is 2/C(12,6) = 0.0021645 (benchstat prints
// p=0.002 n=6); the 95% interval of a median of six is its range, at
// 96.9% confidence (1 - 2/2^6).
func TestCompareAgainstKnownValues(t *testing.T) {
	before := []float64{10, 12, 11, 13, 9, 14}
	after := []float64{5, 4, 6, 3, 7, 2}
	c := Compare(before, after)
	if !near(c.P, 2.0/924) {
		t.Errorf("p %v, want %v", c.P, 2.0/924)
	}
	if !c.Significant {
		t.Error("not significant")
	}
	if c.Before.Median != 11.5 || c.After.Median != 4.5 {
		t.Errorf("medians %v %v", c.Before.Median, c.After.Median)
	}
	if c.Before.Lo != 9 || c.Before.Hi != 14 {
		t.Errorf("before interval [%v, %v], want the range [9, 14]", c.Before.Lo, c.Before.Hi)
	}
	if !near(c.Ratio, 4.5/11.5) || !near(c.CI95[0], 2.0/14) || !near(c.CI95[1], 7.0/9) {
		t.Errorf("ratio %v in %v", c.Ratio, c.CI95)
	}
}

func TestOverlappingSamplesAreNoise(t *testing.T) {
	// Interleaved values: U = 15 of 36, p = 0.699 (scipy's exact
	// two-sided mannwhitneyu gives 0.6991).
	c := Compare([]float64{1, 3, 5, 7, 9, 11}, []float64{2, 4, 6, 8, 10, 12})
	if c.Significant || c.P < 0.6 || c.P > 0.75 {
		t.Errorf("p %v significant %v", c.P, c.Significant)
	}
}

func TestTooFewRunsClaimNothing(t *testing.T) {
	c := Compare([]float64{100}, []float64{50})
	if c.Significant || !math.IsNaN(c.P) || c.Note == "" || c.Ratio != 0.5 {
		t.Errorf("%+v", c)
	}
	// Three against three cannot reach p < 0.05 even when apart (0.1):
	// benchmath says how many are needed.
	c = Compare([]float64{1, 2, 3}, []float64{7, 8, 9})
	if c.Significant || c.Note == "" {
		t.Errorf("%+v", c)
	}
}

func TestGeomean(t *testing.T) {
	if g := Geomean([]float64{2, 8, math.NaN(), 0}); !near(g, 4) {
		t.Errorf("geomean %v, want 4", g)
	}
	if !math.IsNaN(Geomean(nil)) {
		t.Error("geomean of nothing")
	}
}

func ExampleCompare() {
	// Six runs a side of tools/list, requests per second.
	before := []float64{101, 98, 103, 99, 100, 102}
	after := []float64{340, 352, 347, 338, 350, 345}
	c := Compare(before, after)
	fmt.Printf("%.0f → %.0f req/s: ×%.2f [%.2f, %.2f], p=%.3f, significant %v\n",
		c.Before.Median, c.After.Median, c.Ratio, c.CI95[0], c.CI95[1], c.P, c.Significant)
	// Output: 100 → 346 req/s: ×3.44 [3.28, 3.59], p=0.002, significant true
}
