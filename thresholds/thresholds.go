// Package thresholds reads and judges --fail-on expressions, as k6's
// thresholds: a run that breaks one fails, with one line per breach. It
// knows the metrics of each family of report, and nothing of the command
// line or of the report types: the judges take plain figures.
//
//	p99_ms>250  errors>0.1%  rps<100          a run's figures
//	finding:load-time  finding:repeated-gzip>10%  a finding of a class or a rule, at a CPU share
//	unverified                                a load-time or cacheable finding --verify did not confirm
//	regressed  worse  p99_ms:ratio>1.1        before/after: a regressed finding, any change for
//	                                          the worse, a metric's ratio among significant changes
package thresholds

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Family is the kind of report a threshold judges.
type Family string

const (
	Run Family = "run" // one run's figures and findings
	AB  Family = "ab"  // a before/after comparison (probe ab, probe compare)
)

// RunMetrics are the figures of a run a threshold may name.
var RunMetrics = []string{
	"p50_ms", "p95_ms", "p99_ms", "max_ms", "rps", "requests",
	"errors", // the share of requests that failed
	"target_cpu_cores", "target_rss_mb",
	"lost_writes", "sync_p99_ms", "write_p50_ms", // --during-writes
}

// ABMetrics are the metrics a before/after report compares (a ratio).
var ABMetrics = []string{"rps", "p50_ms", "p95_ms", "p99_ms", "cpu_per_req_ms", "alloc_bytes_per_req", "allocs_per_req"}

// Threshold is one read expression.
type Threshold struct {
	Expr    string  // as given
	Family  Family  //
	Metric  string  // a run metric, or the before/after metric of a ratio
	Op      string  // >, >=, <, <=; "" for finding:X and the words
	Value   float64 // the limit (a percentage divided by 100)
	Finding string  // a finding's class or rule id
	Word    string  // regressed, worse (before/after); unverified (a run)
}

var (
	metricRE  = regexp.MustCompile(`^([a-z0-9_:-]+?)(:ratio)?\s*(>=|<=|>|<)\s*([0-9.eE+-]+)(%?)$`)
	findingRE = regexp.MustCompile(`^([a-z0-9-]+)\s*>\s*([0-9.]+)%$`)
	idRE      = regexp.MustCompile(`^[a-z0-9-]+$`)
)

// Parse reads one expression. Its errors quote the expression and say
// what is wanted.
func Parse(expr string) (Threshold, error) {
	t := Threshold{Expr: expr}
	e := strings.TrimSpace(expr)
	bad := func(format string, args ...any) (Threshold, error) {
		return Threshold{}, fmt.Errorf("%q: "+format, append([]any{expr}, args...)...)
	}
	switch {
	case e == "regressed" || e == "worse":
		t.Family, t.Word = AB, e
		return t, nil
	case e == "unverified":
		t.Family, t.Word = Run, e
		return t, nil
	case strings.HasPrefix(e, "finding:"):
		t.Family = Run
		rest := strings.TrimPrefix(e, "finding:")
		if m := findingRE.FindStringSubmatch(rest); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return bad("%q is not a number", m[2])
			}
			t.Finding, t.Op, t.Value = m[1], ">", v/100
		} else if idRE.MatchString(rest) {
			t.Finding = rest
		} else {
			return bad("want finding:CLASS or finding:RULE, with >N%% for a CPU share")
		}
		return t, nil
	}
	m := metricRE.FindStringSubmatch(e)
	if m == nil {
		return bad("want METRIC>VALUE (e.g. p99_ms>250, errors>0.1%%), finding:CLASS, finding:RULE>10%%, unverified, regressed, " +
			"worse or METRIC:ratio>1.1")
	}
	v, err := strconv.ParseFloat(m[4], 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return bad("%q is not a number", m[4])
	}
	if m[5] == "%" {
		v /= 100
	}
	t.Metric, t.Op, t.Value = m[1], m[3], v
	if m[2] != "" {
		if !slices.Contains(ABMetrics, t.Metric) {
			return bad("unknown before/after metric %q (want %s)", t.Metric, strings.Join(ABMetrics, ", "))
		}
		t.Family = AB
		return t, nil
	}
	if !slices.Contains(RunMetrics, t.Metric) {
		return bad("unknown metric %q (want %s, finding:…, regressed, worse or METRIC:ratio)", t.Metric, knownRunMetrics())
	}
	t.Family = Run
	return t, nil
}

func knownRunMetrics() string { return strings.Join(slices.Sorted(slices.Values(RunMetrics)), ", ") }

// ParseAll reads every expression and refuses those of another family
// than the report's (a before/after threshold on a run, and the reverse).
func ParseAll(exprs []string, family Family) ([]Threshold, error) {
	var out []Threshold
	for _, e := range exprs {
		t, err := Parse(e)
		if err != nil {
			return nil, err
		}
		if t.Family != family {
			which := map[Family]string{Run: "a run's figures and findings", AB: "probe ab and probe compare"}[t.Family]
			return nil, fmt.Errorf("%q is for %s", e, which)
		}
		out = append(out, t)
	}
	return out, nil
}

// Breaks says whether a figure breaks the limit. A NaN figure is one the
// report could not tell: it breaks nothing.
func (t Threshold) Breaks(v float64) bool {
	switch t.Op {
	case ">":
		return v > t.Value
	case ">=":
		return v >= t.Value
	case "<":
		return v < t.Value
	case "<=":
		return v <= t.Value
	}
	return false
}

// RunFigures are one run's figures as the judges read them.
type RunFigures struct {
	Microload string
	// Values hold each metric the run can tell; one it cannot (no target
	// process seen, no writes) is absent, and breaks nothing.
	Values           map[string]float64
	Requests, Errors int64 // what the errors share is of
	Findings         []Finding
	// Unverified are the load-time and cacheable findings no verification
	// confirmed, each with why ("rule@function (class): refuted, …").
	Unverified []string
}

// Finding is what a threshold of the findings reads of one.
type Finding struct {
	Rule, Class, Endpoint string
	CPUShare              float64
}

// ABFigures are a before/after comparison's figures.
type ABFigures struct {
	Regressed   []Regression
	Comparisons []Comparison
}

// Regression is a finding's rule that the after side found anew.
type Regression struct{ Microload, Rule string }

// Comparison is one metric of one microload, after against before.
type Comparison struct {
	Microload, Metric string
	Ratio             float64  // after / before
	PValue            *float64 // nil: not tested
	Significant       bool
	Verdict           string // better, worse or ~
}

// Verdict is a threshold judged: broken or not, and each breach.
type Verdict struct {
	Expr     string
	Broken   bool
	Breaches []string
}

// checkRun says how a run breaks t: one line per breach, none when it holds.
func (t Threshold) checkRun(r RunFigures) []string {
	var out []string
	if t.Word == "unverified" {
		for _, u := range r.Unverified {
			out = append(out, r.Microload+": "+u)
		}
		return out
	}
	if t.Finding != "" {
		for _, f := range r.Findings {
			if (f.Class == t.Finding || f.Rule == t.Finding) && (t.Op == "" || f.CPUShare > t.Value) {
				out = append(out, fmt.Sprintf("%s: %s (%s) on %s, %.0f%% of the CPU", r.Microload, f.Rule, f.Class, f.Endpoint, 100*f.CPUShare))
			}
		}
		return out
	}
	v, ok := r.Values[t.Metric]
	if ok && t.Breaks(v) {
		shown := strconv.FormatFloat(v, 'g', 4, 64)
		if t.Metric == "errors" {
			shown = fmt.Sprintf("%.2f%% (%d of %d)", 100*v, r.Errors, r.Requests)
		}
		out = append(out, fmt.Sprintf("%s: %s is %s", r.Microload, t.Metric, shown))
	}
	return out
}

// checkAB says how a before/after breaks t.
func (t Threshold) checkAB(ab ABFigures) []string {
	var out []string
	switch t.Word {
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
		if c.Metric == t.Metric && c.Significant && t.Breaks(c.Ratio) {
			p := "untested"
			if c.PValue != nil {
				p = fmt.Sprintf("%.3f", *c.PValue)
			}
			out = append(out, fmt.Sprintf("%s: %s ×%.2f (p=%s)", c.Microload, c.Metric, c.Ratio, p))
		}
	}
	return out
}

// JudgeRuns judges runs: a verdict per threshold, and a line per breach
// ("threshold p99_ms>250 broken: search: p99_ms is 312.4").
func JudgeRuns(ts []Threshold, runs []RunFigures) ([]Verdict, []string) {
	return judge(ts, func(t Threshold) []string {
		var breaches []string
		for _, r := range runs {
			breaches = append(breaches, t.checkRun(r)...)
		}
		return breaches
	})
}

// JudgeAB judges a before/after comparison.
func JudgeAB(ts []Threshold, ab ABFigures) ([]Verdict, []string) {
	return judge(ts, func(t Threshold) []string { return t.checkAB(ab) })
}

func judge(ts []Threshold, breaches func(Threshold) []string) ([]Verdict, []string) {
	var verdicts []Verdict
	var lines []string
	for _, t := range ts {
		b := breaches(t)
		verdicts = append(verdicts, Verdict{Expr: t.Expr, Broken: len(b) > 0, Breaches: b})
		for _, x := range b {
			lines = append(lines, fmt.Sprintf("threshold %s broken: %s", t.Expr, x))
		}
	}
	return verdicts, lines
}
