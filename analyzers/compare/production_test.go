package compare

import (
	"math"
	"testing"

	"github.com/probehq/probe/internal/proftest"
)

// A side reduces each window as it comes: windows of many one-frame
// samples of functions of their own leave it holding no window's profile,
// each window's figures and the side's sums bounded by the functions
// kept, and the windows merged dropped once they hold more samples than
// one profile may. It held every window (4 GB after 8 of 24 windows of
// 2.7 million samples).
func TestSideKeepsNoWindow(t *testing.T) {
	const windows, perWindow = 12, 10_000
	side := NewSide(3 * perWindow)
	for w := range windows {
		if err := side.Add(proftest.ManyOneFrame(w, perWindow)); err != nil {
			t.Fatal(err)
		}
	}
	if side.Windows() != windows {
		t.Fatalf("%d windows", side.Windows())
	}
	for i, w := range side.windows {
		if len(w) > keptFunctions || w["main.render"] < 49 {
			t.Errorf("window %d keeps %d functions, main.render %.1f%%", i+1, len(w), w["main.render"])
		}
	}
	if len(side.cum) > keptFunctions || len(side.flat) > keptFunctions || side.cum["main.render"] != side.total/2 {
		t.Errorf("the side's sums hold %d and %d functions; main.render %.0f of %.0f", len(side.cum), len(side.flat),
			side.cum["main.render"], side.total)
	}
	if side.merged != nil || !side.tooMany {
		t.Errorf("the windows merged are kept past %d samples", side.maxSamples)
	}
}

func TestHolm(t *testing.T) {
	chs := []MetricChange{}
	for _, p := range []float64{0.001, 0.03, 0.04, math.NaN()} {
		ch := MetricChange{}
		ch.P, ch.Significant, ch.Ratio = p, p <= 0.05, 2
		chs = append(chs, ch)
	}
	holm(chs)
	// Three tested: 0.001 ≤ 0.05/3 holds; 0.03 > 0.05/2 stops the rest,
	// though each alone is under 0.05.
	if !chs[0].Significant || chs[0].Verdict != "worse" || chs[1].Significant || chs[2].Significant {
		t.Errorf("%+v", chs)
	}
}
