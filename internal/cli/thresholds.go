package cli

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/probehq/probe/report"
)

// --fail-on EXPR, as k6's thresholds: a run that breaks one exits 1, one
// line per broken threshold, and the report lists every threshold with
// its verdict. A threshold that names an unknown metric is a bad command
// line, said before anything runs.
//
//	p99_ms>250  errors>0.1%  rps<100          a run's figures (every microload of probe all)
//	finding:load-time  finding:repeated-gzip>10%  a finding of a class or a rule, at a CPU share
//	regressed  worse  p99_ms:ratio>1.1        before/after: a regressed finding, any change for
//	                                          the worse, a metric's ratio among significant changes

type threshold struct {
	expr    string
	family  string // "run" or "ab"
	metric  string // run metric, or the ab metric of a ratio
	op      string
	value   float64
	finding string // class or rule id
	word    string // regressed, worse
}

// runMetrics read a run's figures for --fail-on.
var runMetrics = map[string]func(*report.RunReport) (float64, bool){
	"p50_ms":   func(r *report.RunReport) (float64, bool) { return r.Latency.P50, true },
	"p95_ms":   func(r *report.RunReport) (float64, bool) { return r.Latency.P95, true },
	"p99_ms":   func(r *report.RunReport) (float64, bool) { return r.Latency.P99, true },
	"max_ms":   func(r *report.RunReport) (float64, bool) { return r.Latency.Max, true },
	"rps":      func(r *report.RunReport) (float64, bool) { return r.Latency.RPS, true },
	"requests": func(r *report.RunReport) (float64, bool) { return float64(r.Latency.Requests), true },
	"errors": func(r *report.RunReport) (float64, bool) { // the share of requests that failed
		if r.Latency.Requests == 0 {
			return 0, true
		}
		return float64(r.Latency.Errors) / float64(r.Latency.Requests), true
	},
	"target_cpu_cores": func(r *report.RunReport) (float64, bool) {
		if r.TargetProcess == nil {
			return 0, false
		}
		return r.TargetProcess.CPUCores, true
	},
	"lost_writes": func(r *report.RunReport) (float64, bool) { // --during-writes: changes never seen
		return float64(r.LostWrites()), r.Writes != nil
	},
	"sync_p99_ms": func(r *report.RunReport) (float64, bool) { // --during-writes: reads during a sync
		if r.Writes == nil || r.Writes.During.Requests == 0 {
			return 0, false
		}
		return r.Writes.During.P99, true
	},
	"write_p50_ms": func(r *report.RunReport) (float64, bool) { // --during-writes: a write, until its reply
		if r.Writes == nil || r.Writes.WriteMS.N == 0 {
			return 0, false
		}
		return r.Writes.WriteMS.P50, true
	},
	"target_rss_mb": func(r *report.RunReport) (float64, bool) {
		if r.TargetProcess == nil {
			return 0, false
		}
		return float64(r.TargetProcess.MaxRSS) / (1 << 20), true
	},
}

var thresholdRE = regexp.MustCompile(`^([a-z0-9_:-]+?)(?::ratio)?\s*(>=|<=|>|<)\s*([0-9.eE+-]+)(%?)$`)

func knownMetrics() string {
	return strings.Join(slices.Sorted(maps.Keys(runMetrics)), ", ")
}

// parseThreshold reads one --fail-on expression.
func parseThreshold(s string) (threshold, error) {
	t := threshold{expr: s}
	e := strings.TrimSpace(s)
	bad := func(format string, args ...any) (threshold, error) {
		return threshold{}, usageError{fmt.Sprintf("--fail-on %q: "+format, append([]any{s}, args...)...)}
	}
	switch {
	case e == "regressed" || e == "worse":
		t.family, t.word = "ab", e
		return t, nil
	case strings.HasPrefix(e, "finding:"):
		t.family = "run"
		rest := strings.TrimPrefix(e, "finding:")
		if m := regexp.MustCompile(`^([a-z0-9-]+)\s*>\s*([0-9.]+)%$`).FindStringSubmatch(rest); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			t.finding, t.op, t.value = m[1], ">", v/100
		} else if regexp.MustCompile(`^[a-z0-9-]+$`).MatchString(rest) {
			t.finding = rest
		} else {
			return bad("want finding:CLASS or finding:RULE, with >N%% for a CPU share")
		}
		return t, nil
	}
	m := thresholdRE.FindStringSubmatch(e)
	if m == nil {
		return bad("want METRIC>VALUE (e.g. p99_ms>250, errors>0.1%%), finding:CLASS, finding:RULE>10%%, regressed, worse or METRIC:ratio>1.1")
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return bad("%q is not a number", m[3])
	}
	if m[4] == "%" {
		v /= 100
	}
	t.metric, t.op, t.value = m[1], m[2], v
	if strings.Contains(e, ":ratio") {
		t.family = "ab"
		known := false
		for _, mt := range report.Metrics() {
			known = known || mt.Name == t.metric
		}
		if !known {
			return bad("unknown before/after metric %q", t.metric)
		}
		return t, nil
	}
	if _, ok := runMetrics[t.metric]; !ok {
		return bad("unknown metric %q (want %s, finding:…, regressed, worse or METRIC:ratio)", t.metric, knownMetrics())
	}
	t.family = "run"
	return t, nil
}

func (t threshold) compare(v float64) bool {
	switch t.op {
	case ">":
		return v > t.value
	case ">=":
		return v >= t.value
	case "<":
		return v < t.value
	case "<=":
		return v <= t.value
	}
	return false
}

// checkRun says how a run breaks t: one line per breach, none when it holds.
func (t threshold) checkRun(r *report.RunReport) []string {
	var out []string
	if t.finding != "" {
		for _, f := range r.Findings {
			if (f.Class == t.finding || f.Rule == t.finding) && (t.op == "" || f.CPUShare > t.value) {
				out = append(out, fmt.Sprintf("%s: %s (%s) on %s, %.0f%% of the CPU", r.Microload, f.Rule, f.Class, f.Endpoint, 100*f.CPUShare))
			}
		}
		return out
	}
	v, ok := runMetrics[t.metric](r)
	if ok && t.compare(v) {
		shown := strconv.FormatFloat(v, 'g', 4, 64)
		if t.metric == "errors" {
			shown = fmt.Sprintf("%.2f%% (%d of %d)", 100*v, r.Latency.Errors, r.Latency.Requests)
		}
		out = append(out, fmt.Sprintf("%s: %s is %s", r.Microload, t.metric, shown))
	}
	return out
}

// checkAB says how a before/after breaks t.
func (t threshold) checkAB(ab *report.AB) []string {
	var out []string
	switch t.word {
	case "regressed":
		for _, f := range ab.Regressed {
			out = append(out, fmt.Sprintf("%s: %s regressed", f.Microload, f.Rule))
		}
		return out
	case "worse":
		for _, c := range ab.Comparisons {
			if c.Verdict == "worse" {
				out = append(out, fmt.Sprintf("%s: %s worse, ×%.2f", c.Microload, c.Metric, c.Ratio))
			}
		}
		return out
	}
	for _, c := range ab.Comparisons {
		if c.Metric == t.metric && c.Significant && t.compare(c.Ratio) {
			out = append(out, fmt.Sprintf("%s: %s ×%.2f (p=%.3f)", c.Microload, c.Metric, c.Ratio, *c.PValue))
		}
	}
	return out
}

// parseThresholds reads every --fail-on and refuses those of the other
// family (a before/after threshold on a run, and the reverse).
func parseThresholds(exprs []string, family string) ([]threshold, error) {
	var out []threshold
	for _, e := range exprs {
		t, err := parseThreshold(e)
		if err != nil {
			return nil, err
		}
		if t.family != family {
			which := map[string]string{"run": "a run's figures and findings", "ab": "probe ab and probe compare"}[t.family]
			return nil, usageError{fmt.Sprintf("--fail-on %q is for %s", e, which)}
		}
		out = append(out, t)
	}
	return out, nil
}

// thresholdsBroken is a run that broke thresholds: one line each.
type thresholdsBroken struct{ lines []string }

func (e thresholdsBroken) Error() string { return strings.Join(e.lines, "\n") }

// judgeRuns checks the thresholds on runs and says what they found, as the
// report lists it, and the lines of the breaches.
func judgeRuns(ts []threshold, runs []*report.RunReport) ([]report.Threshold, []string) {
	var verdicts []report.Threshold
	var lines []string
	for _, t := range ts {
		var breaches []string
		for _, r := range runs {
			breaches = append(breaches, t.checkRun(r)...)
		}
		verdicts = append(verdicts, report.Threshold{Expr: t.expr, Broken: len(breaches) > 0, Breaches: breaches})
		for _, b := range breaches {
			lines = append(lines, fmt.Sprintf("threshold %s broken: %s", t.expr, b))
		}
	}
	return verdicts, lines
}

func judgeAB(ts []threshold, ab *report.AB) ([]report.Threshold, []string) {
	var verdicts []report.Threshold
	var lines []string
	for _, t := range ts {
		breaches := t.checkAB(ab)
		verdicts = append(verdicts, report.Threshold{Expr: t.expr, Broken: len(breaches) > 0, Breaches: breaches})
		for _, b := range breaches {
			lines = append(lines, fmt.Sprintf("threshold %s broken: %s", t.expr, b))
		}
	}
	return verdicts, lines
}
