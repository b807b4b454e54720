package pipeline

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/compare"
	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/probes/production"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/abreport"
)

// fleetWindow is a CPU profile of n 10 ms samples drawn at random over leaf
// functions with the given weights, each called from main.serve.
func fleetWindow(rng *rand.Rand, n int, weights map[string]float64) *profile.Profile {
	root := &profile.Function{ID: 1, Name: "main.serve", Filename: "/src/app/main.go"}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1e7, Function: []*profile.Function{root},
		DurationNanos: int64(time.Second)}
	rootLoc := &profile.Location{ID: 1, Line: []profile.Line{{Function: root}}}
	p.Location = []*profile.Location{rootLoc}
	var names []string
	var total float64
	leaf := map[string]*profile.Location{}
	for name, w := range weights {
		names = append(names, name)
		total += w
	}
	for i, name := range sortedKeys(names) {
		fn := &profile.Function{ID: uint64(i + 2), Name: name, Filename: "/src/app/x.go"}
		loc := &profile.Location{ID: uint64(i + 2), Line: []profile.Line{{Function: fn}}}
		p.Function, p.Location, leaf[name] = append(p.Function, fn), append(p.Location, loc), loc
	}
	for range n {
		r := rng.Float64() * total
		for _, name := range sortedKeys(names) {
			if r -= weights[name]; r <= 0 {
				p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{leaf[name], rootLoc}, Value: []int64{1, 1e7}})
				break
			}
		}
	}
	return p
}

func sortedKeys(s []string) []string {
	out := append([]string{}, s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

var fleetMix = map[string]float64{"main.render": 30, "compress/flate.(*compressor).deflate": 25, "main.query": 20,
	"encoding/json.Marshal": 10, "main.auth": 5, "main.log": 5, "main.cache": 5}

// fleetWindows is a side of n windows, each reduced as it is made.
func fleetWindows(seed uint64, n int, weights map[string]float64) *CompareSide {
	rng := rand.New(rand.NewPCG(seed, 1))
	side := NewCompareSide(1 << 20)
	for range n {
		if err := side.Add(fleetWindow(rng, 300, weights)); err != nil {
			panic(err)
		}
	}
	return side
}

// A fall of one function's share is significant; the others' rise with
// it as shares must. Its differential flame graph is drawn.
func TestCompareProductionFindsTheChange(t *testing.T) {
	fixed := map[string]float64{}
	for k, v := range fleetMix {
		fixed[k] = v
	}
	fixed["compress/flate.(*compressor).deflate"] = 2
	ab, err := CompareProduction("shop", "v41", "v42", fleetWindows(1, 12, fleetMix), fleetWindows(2, 12, fixed), nil)
	if err != nil {
		t.Fatal(err)
	}
	var row *abreport.ABComparison
	for i, c := range ab.Comparisons {
		if c.Metric == compare.CPUSharePrefix+"compress/flate.(*compressor).deflate" {
			row = &ab.Comparisons[i]
		}
	}
	if row == nil || !row.Significant || row.Verdict != "better" || row.Before < 20 || row.After > 5 {
		t.Fatalf("deflate's fall: %+v", row)
	}
	files, _ := ab.Files()
	if len(files["flame-diff-shop.html"]) == 0 {
		t.Errorf("no differential flame graph among %d files", len(files))
	}
}

// Same traffic on both sides: over many A/A comparisons, Holm's
// correction keeps "significant" to about one in twenty, where the tests'
// own 5 % each would flag most of them.
func TestCompareProductionAAIsNoise(t *testing.T) {
	const trials = 20
	raw, corrected := 0, 0
	for seed := range uint64(trials) {
		ab, err := CompareProduction("shop", "a", "b", fleetWindows(100+2*seed, 8, fleetMix), fleetWindows(101+2*seed, 8, fleetMix), nil)
		if err != nil {
			t.Fatal(err)
		}
		anyRaw, anyCorrected := false, false
		for _, c := range ab.Comparisons {
			anyRaw = anyRaw || c.PValue != nil && *c.PValue <= 0.05
			anyCorrected = anyCorrected || c.Significant
		}
		if anyRaw {
			raw++
		}
		if anyCorrected {
			corrected++
		}
	}
	if corrected > 2 {
		t.Errorf("%d of %d A/A comparisons called a change significant", corrected, trials)
	}
	if raw < 4 {
		t.Errorf("only %d of %d A/A comparisons had a raw p ≤ 0.05: the test cannot tell Holm's correction from none", raw, trials)
	}
}

// A finding's fleet share is the fleet's CPU under every frame it names.
func TestWeighByFleet(t *testing.T) {
	fleet := fleetWindow(rand.New(rand.NewPCG(7, 1)), 300, fleetMix)
	runs := []*report.Run{{}}
	runs[0].Findings = []analyzers.Finding{
		// The chain's middle need not be the fleet's: the work and the own
		// frame are looked for.
		{Rule: "repeated-gzip", Frames: []string{"compress/flate.(*compressor).deflate", "compress/gzip.(*Writer).Write", "…", "main.serve"},
			OwnFrame: "main.serve"},
		{Rule: "repeated-reply", OwnFrame: "main.render"},
		{Rule: "log-storm"},
		{Rule: "elsewhere", Frames: []string{"main.render"}, OwnFrame: "compress/flate.(*compressor).deflate"},
	}
	src, _ := production.ParseSource("pyroscope://127.0.0.1:4040")
	WeighByFleet(fleet, src, production.Query{Service: "shop", Start: time.Now().Add(-time.Hour), End: time.Now()}, runs)
	sh := runs[0].Production.Shares
	if sh[0] == nil || math.Abs(*sh[0]-0.25) > 0.07 || sh[1] == nil || math.Abs(*sh[1]-0.30) > 0.07 || sh[2] != nil || sh[3] == nil || *sh[3] != 0 {
		t.Fatalf("shares %v", deref(sh))
	}
	js, err := runs[0].JSON()
	if err != nil || !strings.Contains(string(js), `"production_share": 0.`) || !strings.Contains(string(js), `"service": "shop"`) {
		t.Errorf("report.json lacks the shares: %s", js)
	}
	var b strings.Builder
	runs[0].WriteTable(&b)
	if !strings.Contains(b.String(), "of the fleet's CPU (shop in pyroscope://127.0.0.1:4040") {
		t.Errorf("table: %s", b.String())
	}
}

func deref(ps []*float64) []float64 {
	var out []float64
	for _, p := range ps {
		if p == nil {
			out = append(out, -1)
		} else {
			out = append(out, *p)
		}
	}
	return out
}

func TestTopFunctionsAreOwnCodeByFlatShare(t *testing.T) {
	p := fleetWindow(rand.New(rand.NewPCG(9, 1)), 300, fleetMix)
	top := TopFunctions(p, frames.Code{}, 3)
	if len(top) != 3 || top[0].Function != "main.render" || top[1].Function != "main.query" || top[0].Kind != frames.Own {
		t.Fatalf("%+v", top)
	}
	for _, f := range top {
		if strings.HasPrefix(f.Function, "compress/") {
			t.Errorf("standard library among own functions: %+v", top)
		}
	}
}
