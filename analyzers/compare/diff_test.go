package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/probehq/probe/analyzers"
)

func TestHotPathDeltaNamesWhatMoved(t *testing.T) {
	// Before: gzip is 60% of the samples; after, it is gone and the
	// handler's own JSON work is half of a smaller whole.
	before := newProfile("cpu").
		add(600, "compress/flate.(*compressor).deflate", "compress/gzip.(*Writer).Write", "own:app.handleSitemap").
		add(300, "encoding/json.Marshal", "own:app.handleSitemap").
		add(100, "runtime.mallocgc").p
	after := newProfile("cpu").
		add(100, "encoding/json.Marshal", "own:app.handleSitemap").
		add(100, "runtime.mallocgc").p
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

// cpuProfile builds a profile of one value type from stacks, innermost
// first ("own:" marks the target's own function: its name without it).
type cpuProfile struct {
	p     *profile.Profile
	funcs map[string]*profile.Function
}

func newProfile(sampleType string) *cpuProfile {
	return &cpuProfile{p: &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"},
		{Type: sampleType, Unit: "nanoseconds"}}}, funcs: map[string]*profile.Function{}}
}

func (b *cpuProfile) add(value int64, stack ...string) *cpuProfile {
	s := &profile.Sample{Value: []int64{1, value}}
	for _, name := range stack {
		name = strings.TrimPrefix(name, "own:")
		f := b.funcs[name]
		if f == nil {
			f = &profile.Function{ID: uint64(len(b.funcs) + 1), Name: name}
			b.funcs[name] = f
			b.p.Function = append(b.p.Function, f)
		}
		loc := &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: f}}}
		b.p.Location = append(b.p.Location, loc)
		s.Location = append(s.Location, loc)
	}
	b.p.Sample = append(b.p.Sample, s)
	return b
}
