package report

import (
	"html"
	"strings"
	"testing"
)

// The experiment's section shows the variants, their replies and each
// finding's CPU per request per variant, in report.md and report.html.
func TestExperimentSection(t *testing.T) {
	r := &Run{Experiment: &Experiment{Endpoint: "GET /config", BudgetS: 12, TookS: 12.3,
		Variants: []ExperimentVariant{
			{Name: "same-key", Request: "GET /config?page=2", Requests: 736, StableDigest: "3e5d", SameReply: true},
			{Name: "other-key-1", ShouldMatter: true, Request: "GET /config?page=<3>", Requests: 572, StableDigest: "02e9"},
		},
		Findings: []ExperimentFinding{{Rule: "repeated-json-decode", ClassBefore: "info", Class: "load-time", Verdict: "input-independent",
			Why: "stayed put", SlotNoise: 0.14, Tolerance: 0.41,
			Frames: []ExperimentFrame{{Frame: "encoding/json.Unmarshal", CPUPerRequestMS: []float64{2.88, 3.09}, Samples: []int{212, 173}}}}},
	}}
	md := r.experimentMarkdown()
	for _, want := range []string{"## Experiment", "| same-key", "`GET /config?page=2`", "info → load-time (input-independent)",
		"`encoding/json.Unmarshal`", "2.880 (212 samples)", "3.090 (173 samples)", "by ±14% (a standard deviation); the " +
			"tolerance was ±41%."} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md's experiment lacks %q:\n%s", want, md)
		}
	}
	var term strings.Builder
	r.writeExperimentLines(&term)
	if want := "experiment: repeated-json-decode info → load-time (input-independent); ms of CPU a request in " +
		"encoding/json.Unmarshal: same-key 2.880, other-key-1 3.090"; !strings.Contains(term.String(), want) {
		t.Errorf("terminal %q, want %q", term.String(), want)
	}
	if !strings.Contains(md, "input-independent). Stayed put") {
		t.Errorf("the verdict's words do not start a sentence:\n%s", md)
	}
	page := r.experimentHTML(2)
	if !strings.Contains(page, "<h2>Experiment</h2>") || !strings.Contains(page, "page=&lt;3&gt;") || strings.Contains(page, "<3>") {
		t.Errorf("report.html's experiment: %s", page)
	}
	if !strings.Contains(page, "the tolerance was ±41%.</p>") {
		t.Errorf("report.html's experiment does not give the seconds' noise: %s", page)
	}
	if strings.Contains(md, "left out") {
		t.Errorf("a quiet experiment says seconds were left out:\n%s", md)
	}
	r.Experiment.Variants[1].BusySecondsLeftOut = 2
	busy := "2 of the variants' seconds were left out: other processes used more than 0.25 cores in them"
	if md, page := r.experimentMarkdown(), r.experimentHTML(2); !strings.Contains(md, busy) ||
		!strings.Contains(page, html.EscapeString(busy)) {
		t.Errorf("the seconds left out for a busy machine are not said:\n%s\n%s", md, page)
	}
	r.Experiment.Findings[0].Verdict, r.Experiment.Findings[0].Tolerance = "inconclusive", 0
	if md := r.experimentMarkdown(); !strings.Contains(md, "by ±14% (a standard deviation).") || strings.Contains(md, "tolerance was") {
		t.Errorf("an inconclusive verdict's noise note:\n%s", md)
	}
	r.Experiment.Findings[0].SlotNoise = 0
	if md := r.experimentMarkdown(); strings.Contains(md, "One second's") {
		t.Errorf("a noise note without the seconds' noise measured:\n%s", md)
	}
	r.Experiment = &Experiment{Endpoint: "GET /x", Skipped: "no key"}
	if md := r.experimentMarkdown(); !strings.Contains(md, "Not run: no key") {
		t.Errorf("a skipped experiment: %s", md)
	}
	if (&Run{}).experimentMarkdown() != "" {
		t.Error("a run without an experiment has a section")
	}
}
