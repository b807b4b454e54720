package shared

import (
	"fmt"
	"strings"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/abreport"
	"github.com/probehq/probe/thresholds"
)

// --fail-on EXPR: the grammar and the judges are package thresholds; here
// a bad expression becomes a bad command line (exit 2), and the reports
// become the plain figures the judges read.

// parseThresholds reads every --fail-on for a report of family ("run" or
// "ab").
func ParseThresholds(exprs []string, family string) ([]thresholds.Threshold, error) {
	ts, err := thresholds.ParseAll(exprs, thresholds.Family(family))
	if err != nil {
		return nil, UsageError{"--fail-on " + err.Error()}
	}
	return ts, nil
}

// thresholdsBroken is a run that broke thresholds: one line each.
type ThresholdsBroken struct{ lines []string }

func (e ThresholdsBroken) Error() string { return strings.Join(e.lines, "\n") }

// runFigures are what the thresholds read of a run: each metric of
// thresholds.RunMetrics the run can tell.
func RunFigures(r *report.Run) thresholds.RunFigures {
	f := thresholds.RunFigures{Microload: r.Microload, Requests: r.Latency.Requests, Errors: r.Latency.Errors, Values: map[string]float64{
		"p50_ms": r.Latency.P50, "p95_ms": r.Latency.P95, "p99_ms": r.Latency.P99, "max_ms": r.Latency.Max,
		"rps": r.Latency.RPS, "requests": float64(r.Latency.Requests), "errors": 0,
	}}
	if r.Latency.Requests > 0 {
		f.Values["errors"] = float64(r.Latency.Errors) / float64(r.Latency.Requests)
	}
	if p := r.TargetProcess; p != nil {
		f.Values["target_cpu_cores"] = p.CPUCores
		f.Values["target_rss_mb"] = float64(p.MaxRSS) / (1 << 20)
	}
	if w := r.Writes; w != nil {
		f.Values["lost_writes"] = float64(r.LostWrites())
		if w.During.Requests > 0 {
			f.Values["sync_p99_ms"] = w.During.P99
		}
		if w.WriteMS.N > 0 {
			f.Values["write_p50_ms"] = w.WriteMS.P50
		}
	}
	for _, x := range r.Findings {
		f.Findings = append(f.Findings, thresholds.Finding{Rule: x.Rule, Class: x.Class, Endpoint: x.Endpoint, CPUShare: x.CPUShare})
	}
	f.Unverified = unverified(r)
	return f
}

// unverified are r's load-time and cacheable findings that no verification
// confirmed (--fail-on unverified): without --verify, every one of them.
func unverified(r *report.Run) []string {
	var out []string
	for _, x := range r.Findings {
		if x.Class != "load-time" && x.Class != "cacheable" {
			continue
		}
		name, why, confirmed := x.Rule+"@"+x.OwnFrame, "not verified (--verify)", false
		for _, v := range r.Verification {
			if v.Finding == name && v.Class == x.Class {
				why, confirmed = v.Verdict, v.Verdict == report.Confirmed
				if v.Why != "" {
					why += ": " + v.Why
				}
			}
		}
		if !confirmed {
			out = append(out, fmt.Sprintf("%s (%s) %s", name, x.Class, why))
		}
	}
	return out
}

// judgeRuns checks the thresholds on runs: the verdicts as the report
// lists them, and the lines of the breaches.
func judgeRuns(ts []thresholds.Threshold, runs []*report.Run) ([]report.Threshold, []string) {
	var figures []thresholds.RunFigures
	for _, r := range runs {
		figures = append(figures, RunFigures(r))
	}
	verdicts, lines := thresholds.JudgeRuns(ts, figures)
	return ReportThresholds(verdicts), lines
}

func judgeAB(ts []thresholds.Threshold, ab *abreport.AB) ([]report.Threshold, []string) {
	var f thresholds.ABFigures
	for _, r := range ab.Regressed {
		f.Regressed = append(f.Regressed, thresholds.Regression{Microload: r.Microload, Rule: r.Rule})
	}
	for _, c := range ab.Comparisons {
		f.Comparisons = append(f.Comparisons, thresholds.Comparison{Microload: c.Microload, Metric: c.Metric, Ratio: c.Ratio,
			PValue: c.PValue, Significant: c.Significant, Verdict: c.Verdict})
	}
	verdicts, lines := thresholds.JudgeAB(ts, f)
	return ReportThresholds(verdicts), lines
}

func ReportThresholds(vs []thresholds.Verdict) []report.Threshold {
	var out []report.Threshold
	for _, v := range vs {
		out = append(out, report.Threshold{Expr: v.Expr, Broken: v.Broken, Breaches: v.Breaches})
	}
	return out
}
