package compare

import (
	"math"
	"slices"
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

// A deploy that stops loading documents per search also stops the garbage
// they made: the collector's and allocator's falls (runtime frames) are
// larger than the documents' own and once took every place a fall may
// have, so the compare never tested the work that moved. The runtime gets
// one place each way; the program keeps three.
func TestTheProgramsFallIsTestedBesideTheRuntimes(t *testing.T) {
	const h = "main.serve;main.mw1;main.mw2;main.handler;"
	before := map[string]int64{
		h + "main.search;lib.collect":                                                               250,
		h + "main.search;main.loadDocs;lib.decA":                                                    30,
		h + "main.search;main.loadDocs;lib.decB":                                                    30,
		h + "main.search;main.loadDocs;lib.decC":                                                    30,
		h + "main.search;main.loadDocs;lib.decD":                                                    30,
		h + "main.search;main.loadDocs;lib.decE":                                                    30,
		h + "runtime.mallocgc;runtime.nextFreeFast":                                                 10,
		h + "runtime.mallocgc;runtime.gcAssistAlloc;runtime.scanSpan":                               20,
		h + "runtime.mallocgc;runtime.gcAssistAlloc;runtime.gcAssistAlloc.func2;runtime.scanObject": 110,
		h + "runtime.mallocgc;runtime.gcAssistAlloc;runtime.gcAssistAlloc.func2;runtime.greyObject": 110,
		"main.serve;main.mw1;main.mw2;main.logger;lib.fmt":                                          150,
		"main.serve;main.mw1;main.metrics;lib.count":                                                80,
		"main.serve;main.tls;lib.aes":                                                               120,
	}
	after := map[string]int64{
		h + "main.search;lib.collect":                                                               350,
		h + "main.search;main.addLocations":                                                         100,
		h + "runtime.mallocgc;runtime.nextFreeFast":                                                 5,
		h + "runtime.mallocgc;runtime.gcAssistAlloc;runtime.scanSpan":                               5,
		h + "runtime.mallocgc;runtime.gcAssistAlloc;runtime.gcAssistAlloc.func2;runtime.scanObject": 5,
		h + "runtime.mallocgc;runtime.gcAssistAlloc;runtime.gcAssistAlloc.func2;runtime.greyObject": 5,
		"main.serve;main.mw1;main.mw2;main.logger;lib.fmt":                                          250,
		"main.serve;main.mw1;main.metrics;lib.count":                                                120,
		"main.serve;main.tls;lib.aes":                                                               160,
	}
	sides := [2]*Side{NewSide(1e6), NewSide(1e6)}
	for i, stacks := range []map[string]int64{before, after} {
		for range 4 {
			p := proftest.Folded(stacks)
			p.PeriodType, p.Period = p.SampleType[1], 10_000_000
			if err := sides[i].Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	fns := compared(sides[0], sides[1])
	var runtimeFalls int
	for _, fn := range fns {
		switch fn {
		case "runtime.mallocgc", "runtime.gcAssistAlloc", "runtime.gcAssistAlloc.func2":
			runtimeFalls++
		}
	}
	if !slices.Contains(fns, "main.loadDocs") || runtimeFalls == 0 {
		t.Errorf("the documents' fall and one of the runtime's should be tested: %q", fns)
	}
}
