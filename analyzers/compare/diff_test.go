package compare

import (
	"math"
	"testing"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/internal/proftest"
)

func TestHotPathDeltaNamesWhatMoved(t *testing.T) {
	// Before: gzip is 60% of the samples; after, it is gone and the
	// handler's own JSON work is half of a smaller whole.
	// Stacks outermost first.
	gzipStack := "app.handleSitemap;compress/gzip.(*Writer).Write;compress/flate.(*compressor).deflate"
	jsonStack := "app.handleSitemap;encoding/json.Marshal"
	before := proftest.Folded(map[string]int64{gzipStack: 600, jsonStack: 300, "runtime.mallocgc": 100})
	after := proftest.Folded(map[string]int64{jsonStack: 100, "runtime.mallocgc": 100})
	gainers, losers := HotPathDelta(before, after, "cpu", 3)
	if len(losers) == 0 || losers[0].Function != "compress/flate.(*compressor).deflate" && losers[0].Function != "compress/gzip.(*Writer).Write" {
		t.Fatalf("losers %+v", losers)
	}
	if l := losers[0]; math.Abs(l.CumBefore-0.6) > 1e-9 || l.CumAfter != 0 {
		t.Errorf("gzip share %v → %v, want 0.6 → 0", l.CumBefore, l.CumAfter)
	}
	var json *FuncDelta
	for i := range gainers {
		if gainers[i].Function == "encoding/json.Marshal" {
			json = &gainers[i]
		}
	}
	if json == nil || math.Abs(json.FlatBefore-0.3) > 1e-9 || math.Abs(json.FlatAfter-0.5) > 1e-9 {
		t.Errorf("json.Marshal among gainers %+v", gainers)
	}
	// The handler is 90% before and 50% after: a loser, whose flat share
	// (none: it only calls) stays 0.
	for _, l := range losers {
		if l.Function == "app.handleSitemap" && (l.FlatBefore != 0 || math.Abs(l.CumBefore-0.9) > 1e-9) {
			t.Errorf("handler %+v", l)
		}
	}
	if g, l := HotPathDelta(before, before, "cpu", 3); len(g)+len(l) != 0 {
		t.Errorf("a profile against itself moved: %v %v", g, l)
	}
}

func TestFindingChangesCountRuns(t *testing.T) {
	gzip := analyzers.Finding{Rule: "repeated-gzip", Class: "load-time", Endpoint: "/sitemap.xml"}
	scan := analyzers.Finding{Rule: "per-request-full-scan", Class: "load-time"}
	info := analyzers.Finding{Rule: "mystery", Class: "info"}
	before := [][]analyzers.Finding{{gzip, info}, {gzip}, {gzip, scan}, {gzip}}
	after := [][]analyzers.Finding{{scan}, {scan}, {scan}, {gzip}}
	fixed, regressed := FindingChanges("sitemap", before, after)
	if len(fixed) != 1 || fixed[0].Rule != "repeated-gzip" || fixed[0].Endpoint != "/sitemap.xml" {
		t.Errorf("fixed %+v", fixed)
	}
	// The scan: one run of four before, three of four after. gzip after:
	// one of four, a third at most.
	if len(regressed) != 1 || regressed[0].Rule != "per-request-full-scan" {
		t.Errorf("regressed %+v", regressed)
	}
	// Found in about half the runs of each side: a finding at its
	// threshold, not a change.
	flap := [][]analyzers.Finding{{scan}, {}, {scan}, {}, {scan}, {}}
	if f, r := FindingChanges("x", flap, [][]analyzers.Finding{{}, {scan}, {scan}, {scan}, {scan}, {}}); len(f)+len(r) != 0 {
		t.Errorf("a flapping finding reported as %v %v", f, r)
	}
}
