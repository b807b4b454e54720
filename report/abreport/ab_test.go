package abreport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/compare"
	"github.com/probehq/probe/report"
)

// buildAB compares runs as probe compare's compare step does.
func buildAB(before, after map[string][]*RunData) *AB {
	var comps []compare.Comparison
	curves := map[string][2][][]CurvePoint{}
	for _, m := range []string{"page", "search", "toolslist"} {
		if len(before[m]) == 0 {
			continue
		}
		var fb, fa []compare.RunFigures
		var cb, ca [][]CurvePoint
		for _, d := range before[m] {
			fb, cb = append(fb, d.Figures()), append(cb, d.Curve)
		}
		for _, d := range after[m] {
			fa, ca = append(fa, d.Figures()), append(ca, d.Curve)
		}
		comps = append(comps, compare.Compare(m, Metrics(), fb, fa))
		curves[m] = [2][][]CurvePoint{cb, ca}
	}
	return NewAB("v1", "v2", comps, curves, nil, nil, nil)
}

// runOf is a run with the figures that matter here.
func runOf(microload string, rps, p50, cpuS float64, requests int64, rules ...string) *RunData {
	r := &report.Run{Summary: report.Summary{Microload: microload,
		Latency: report.Latency{Requests: requests, RPS: rps, Percentiles: report.Percentiles{P50: p50, P95: 2 * p50, P99: 3 * p50}}},
		TargetProcess: &report.Process{CPUSeconds: cpuS}}
	for _, rule := range rules {
		r.Findings = append(r.Findings, analyzers.Finding{Rule: rule, Class: "load-time"})
	}
	return &RunData{Report: r, Curve: []CurvePoint{{50, p50}, {90, 2 * p50}, {99, 3 * p50}, {99.9, 4 * p50}}}
}

// sampleSides are six runs a side: toolslist with four times the
// throughput, a tenth of the CPU and gzip gone; search with the same
// figures, shuffled: noise.
func sampleSides() (before, after map[string][]*RunData) {
	before, after = map[string][]*RunData{}, map[string][]*RunData{}
	for i, jitter := range []float64{0, 3, -2, 5, -4, 1} {
		before["toolslist"] = append(before["toolslist"], runOf("toolslist", 400+jitter, 20+jitter/10, 10+jitter/10, 4000, "repeated-schema"))
		after["toolslist"] = append(after["toolslist"], runOf("toolslist", 1600+jitter, 5+jitter/20, 1.6+jitter/100, 16000))
		before["search"] = append(before["search"], runOf("search", 100+float64(i), 9, 5, 1000))
		after["search"] = append(after["search"], runOf("search", 105-float64(i), 9, 5, 1000))
	}
	return before, after
}

func TestBuildABClaimsOnlyWhatTheRunsShow(t *testing.T) {
	ab := buildAB(sampleSides())
	if ab.Runs != 6 || len(ab.Microloads) != 2 {
		t.Fatalf("runs %d microloads %v", ab.Runs, ab.Microloads)
	}
	get := func(m, metric string) ABComparison {
		for _, c := range ab.Comparisons {
			if c.Microload == m && c.Metric == metric {
				return c
			}
		}
		t.Fatalf("no %s %s", m, metric)
		return ABComparison{}
	}
	rps := get("toolslist", "rps")
	if !rps.Significant || rps.Verdict != "better" || rps.Ratio < 3.9 || rps.Ratio > 4.1 || rps.PValue == nil || *rps.PValue > 0.01 {
		t.Errorf("toolslist rps %+v", rps)
	}
	if cpu := get("toolslist", "cpu_per_req_ms"); cpu.Verdict != "better" || cpu.Ratio > 0.05 {
		// 10 s / 4000 = 2.5 ms before, 1.6 s / 16000 = 0.1 ms after
		t.Errorf("toolslist cpu %+v", cpu)
	}
	if s := get("search", "rps"); s.Significant || s.Verdict != "~" {
		t.Errorf("search rps is noise: %+v", s)
	}
	if len(ab.Fixed) != 1 || ab.Fixed[0].Rule != "repeated-schema" || len(ab.Regressed) != 0 {
		t.Errorf("fixed %v regressed %v", ab.Fixed, ab.Regressed)
	}
	if g := ab.Geomean["rps"]; g < 1.9 || g > 2.1 { // √(4 × ~1)
		t.Errorf("geomean rps %v", g)
	}
	// DESIGN.md's Before/after JSON.
	var doc map[string]any
	js, _ := ab.JSON()
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"before", "after", "runs", "comparisons", "fixed", "regressed"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	row := doc["comparisons"].([]any)[0].(map[string]any)
	for _, k := range []string{"microload", "metric", "before", "after", "ratio", "ci95", "p_value", "significant"} {
		if _, ok := row[k]; !ok {
			t.Errorf("comparison lacks %q", k)
		}
	}
	page := ab.HTML()
	if strings.Count(page, "<svg") != 2 || strings.Count(page, "<polyline") != 24 || strings.Contains(page, "<script") {
		t.Errorf("report.html: %d plots, %d lines", strings.Count(page, "<svg"), strings.Count(page, "<polyline"))
	}
	if md := ab.Markdown(); !strings.Contains(md, "**fixed** `repeated-schema` on toolslist") {
		t.Errorf("report.md:\n%s", md)
	}
}

func TestSingleRunsClaimNothing(t *testing.T) {
	ab := buildAB(map[string][]*RunData{"page": {runOf("page", 100, 1, 1, 100)}},
		map[string][]*RunData{"page": {runOf("page", 300, 1, 1, 300)}})
	for _, c := range ab.Comparisons {
		if c.Significant || c.PValue != nil {
			t.Errorf("%+v", c)
		}
	}
	if len(ab.Warnings) == 0 || ab.Warnings[0].Kind != "single-runs" {
		t.Errorf("warnings %v", ab.Warnings)
	}
	js, _ := ab.JSON()
	doc := string(js)
	if !strings.Contains(doc, `"p_value": null`) {
		t.Error("p_value of a single run is not null")
	}
	// A median of one has no interval: its bounds are null, not 0.
	if !strings.Contains(doc, `"before_ci95": [
        null,
        null
      ]`) {
		t.Errorf("intervals of single runs:\n%s", doc)
	}
}

// The percentile plot reads back what WriteFolder wrote, in milliseconds.
func TestCurveReadsLatencyHgrm(t *testing.T) {
	h := hdrhistogram.New(1, 60_000_000, 3)
	for range 99 {
		h.RecordValue(5000) // 5 ms in µs
	}
	h.RecordValue(80000)
	path := filepath.Join(t.TempDir(), "latency.hgrm")
	if err := os.WriteFile(path, report.HGRM(h), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := readCurve(path)
	if err != nil || len(c) < 3 {
		t.Fatalf("%v %v", c, err)
	}
	if c[0].Ms < 4.99 || c[0].Ms > 5.01 || c[len(c)-1].Ms < 79 || c[len(c)-1].Ms > 81 {
		t.Errorf("curve %v: want 5 ms up to 80 ms", c)
	}
}
