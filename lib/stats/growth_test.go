package stats

import (
	"fmt"
	"math"
	"testing"
)

func TestFitGrowth(t *testing.T) {
	sizes := []float64{500, 1000, 2000, 4000}
	for _, tc := range []struct {
		name  string
		f     func(x float64) float64
		slope float64
		shape string
	}{
		{"linear", func(x float64) float64 { return 0.002 * x }, 1, "linear"},
		{"constant", func(x float64) float64 { return 3 }, 0, "constant"},
		{"quadratic", func(x float64) float64 { return 1e-6 * x * x }, 2, "superlinear"},
		{"square root", func(x float64) float64 { return math.Sqrt(x) }, 0.5, "sublinear"},
	} {
		var ys []float64
		for i, x := range sizes {
			ys = append(ys, tc.f(x)*(1+0.01*float64(i%2))) // a little noise
		}
		g, err := FitGrowth(sizes, ys)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(g.Slope-tc.slope) > 0.05 || g.Lo > g.Slope || g.Hi < g.Slope || g.Shape() != tc.shape {
			t.Errorf("%s: %+v %s", tc.name, g, g.Shape())
		}
	}
	// Noise that hides the shape claims nothing.
	g, _ := FitGrowth(sizes, []float64{1, 9, 2, 8})
	if g.Shape() != "unclear" {
		t.Errorf("noise: %+v is %s", g, g.Shape())
	}
	if _, err := FitGrowth([]float64{500}, []float64{1}); err == nil {
		t.Error("one size fitted")
	}
	// Two sizes: a slope, no interval.
	if g, err := FitGrowth([]float64{1000, 10000}, []float64{1, 10}); err != nil || math.Abs(g.Slope-1) > 1e-9 || !math.IsInf(g.Hi, 1) {
		t.Errorf("two sizes: %+v %v", g, err)
	}
}

func ExampleFitGrowth() {
	notes := []float64{500, 1000, 2000, 4000}
	cpuPerPageMs := []float64{0.51, 1.02, 1.98, 4.1}
	g, _ := FitGrowth(notes, cpuPerPageMs)
	fmt.Printf("slope %.2f [%.2f, %.2f]: %s\n", g.Slope, g.Lo, g.Hi, g.Shape())
	// Output: slope 1.00 [0.94, 1.05]: linear
}
