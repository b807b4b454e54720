package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Growth is how a figure grows with the size of the data: the slope of
// log(figure) against log(size), so 1 is linear, 0 is constant and 2
// quadratic, with its 95% confidence interval (Student's t on n-2 degrees
// of freedom; ±Inf with fewer than three sizes).
type Growth struct {
	Slope, Lo, Hi float64
	R2            float64
	N             int
}

// FitGrowth fits the growth of ys over sizes xs (both positive; pairs with
// a value ≤ 0 or not finite are left out).
func FitGrowth(xs, ys []float64) (Growth, error) {
	var lx, ly []float64
	for i := range xs {
		if i < len(ys) && xs[i] > 0 && ys[i] > 0 && !math.IsInf(ys[i], 0) && !math.IsNaN(ys[i]) {
			lx, ly = append(lx, math.Log(xs[i])), append(ly, math.Log(ys[i]))
		}
	}
	g := Growth{N: len(lx), Lo: math.Inf(-1), Hi: math.Inf(1)}
	if g.N < 2 {
		return g, fmt.Errorf("%d sizes with a value: a growth needs two at least", g.N)
	}
	alpha, beta := stat.LinearRegression(lx, ly, nil, false)
	g.Slope = beta
	if g.N < 3 {
		return g, nil
	}
	g.R2 = stat.RSquared(lx, ly, nil, alpha, beta)
	var sse, sxx float64
	mx := stat.Mean(lx, nil)
	for i := range lx {
		r := ly[i] - (alpha + beta*lx[i])
		sse += r * r
		sxx += (lx[i] - mx) * (lx[i] - mx)
	}
	se := math.Sqrt(sse / float64(g.N-2) / sxx)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(g.N - 2)}.Quantile(0.975)
	g.Lo, g.Hi = g.Slope-t*se, g.Slope+t*se
	return g, nil
}

// Shape says in words how a growth behaves: "constant", "sublinear",
// "linear" or "superlinear" by its slope, and "unclear" when its interval
// does not bear that out (a linear growth must be clearly above half
// linear and below quadratic; a constant one clearly below half linear).
// Without an interval (two sizes) the slope alone decides.
func (g Growth) Shape() string {
	if g.N < 2 {
		return "unclear"
	}
	var shape string
	switch s := g.Slope; {
	case s < 0.25:
		shape = "constant"
	case s < 0.75:
		shape = "sublinear"
	case s <= 1.3:
		shape = "linear"
	default:
		shape = "superlinear"
	}
	if math.IsInf(g.Lo, 0) || math.IsInf(g.Hi, 0) {
		return shape
	}
	ok := map[string]bool{
		"constant":    g.Hi < 0.5,
		"sublinear":   g.Lo > 0.1 && g.Hi < 1,
		"linear":      g.Lo > 0.5 && g.Hi < 2,
		"superlinear": g.Lo > 1,
	}[shape]
	if !ok {
		return "unclear"
	}
	return shape
}
