package compare

import (
	"math"
	"testing"

	"github.com/probehq/probe/analyzers"
)

func figures(rps, cpu float64, rules ...string) RunFigures {
	f := RunFigures{Values: map[string]float64{"rps": rps, "cpu_per_req_ms": cpu, "alloc_bytes_per_req": math.NaN()}}
	for _, r := range rules {
		f.Findings = append(f.Findings, analyzers.Finding{Rule: r, Class: "load-time"})
	}
	return f
}

// Compare claims only what the runs show: a fourfold change at six runs a
// side is significant with p = 2/924; shuffled figures are noise; a metric
// one side cannot tell is named, not compared.
func TestCompareClaimsOnlyWhatTheRunsShow(t *testing.T) {
	metrics := []Metric{{Name: "rps", HigherBetter: true}, {Name: "cpu_per_req_ms"}, {Name: "alloc_bytes_per_req"}}
	var before, after, same1, same2 []RunFigures
	for i, jitter := range []float64{0, 3, -2, 5, -4, 1} {
		before = append(before, figures(400+jitter, 2.5+jitter/100, "repeated-schema"))
		after = append(after, figures(1600+jitter, 0.1+jitter/1000))
		same1 = append(same1, figures(100+float64(i), 1))
		same2 = append(same2, figures(105-float64(i), 1))
	}
	c := Compare("toolslist", metrics, before, after)
	if len(c.Changes) != 2 || c.Runs != 6 {
		t.Fatalf("changes %+v", c.Changes)
	}
	rps, cpu := c.Changes[0], c.Changes[1]
	if !rps.Significant || rps.Verdict != "better" || math.Abs(rps.P-2.0/924) > 1e-9 || rps.Ratio < 3.9 || rps.Ratio > 4.1 || rps.N != [2]int{6, 6} {
		t.Errorf("rps %+v", rps)
	}
	if cpu.Verdict != "better" || cpu.Ratio > 0.05 {
		t.Errorf("cpu per request %+v: lower is better", cpu)
	}
	if len(c.Missing) != 0 {
		t.Errorf("a metric neither side has is not missing: %v", c.Missing)
	}
	if len(c.Fixed) != 1 || c.Fixed[0].Rule != "repeated-schema" || len(c.Regressed) != 0 {
		t.Errorf("fixed %v regressed %v", c.Fixed, c.Regressed)
	}
	noise := Compare("search", metrics, same1, same2)
	if noise.Changes[0].Significant || noise.Changes[0].Verdict != "~" {
		t.Errorf("shuffled figures: %+v", noise.Changes[0])
	}
	if g := Geomeans([]Comparison{c, noise})["rps"]; g < 1.9 || g > 2.1 { // √(4 × ~1)
		t.Errorf("geomean rps %v", g)
	}
	// One side without a figure: named, not compared.
	after[0].Values["alloc_bytes_per_req"] = 10
	if c := Compare("toolslist", metrics, before, after); len(c.Missing) != 1 || c.Missing[0] != "alloc_bytes_per_req" {
		t.Errorf("missing %v", c.Missing)
	}
	// One run a side: figures side by side, nothing tested.
	single := Compare("page", metrics, before[:1], after[:1])
	if single.Changes[0].Significant || !math.IsNaN(single.Changes[0].P) || single.Changes[0].Verdict != "~" {
		t.Errorf("single runs: %+v", single.Changes[0])
	}
}
