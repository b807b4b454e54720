package thresholds

import (
	"math"
	"strings"
	"testing"
)

func TestParseMetricForms(t *testing.T) {
	for _, tc := range []struct {
		expr   string
		metric string
		op     string
		value  float64
		family Family
	}{
		{"p99_ms>250", "p99_ms", ">", 250, Run},
		{"p99_ms >= 250", "p99_ms", ">=", 250, Run},
		{"rps<100", "rps", "<", 100, Run},
		{"rps<=100.5", "rps", "<=", 100.5, Run},
		{"  p50_ms>1  ", "p50_ms", ">", 1, Run},
		{"errors>0.1%", "errors", ">", 0.001, Run},
		{"errors>0.001", "errors", ">", 0.001, Run},
		{"errors>=100%", "errors", ">=", 1, Run},
		{"max_ms>1e3", "max_ms", ">", 1000, Run},
		{"requests<0", "requests", "<", 0, Run},
		{"target_rss_mb>-1", "target_rss_mb", ">", -1, Run},
		{"lost_writes>0", "lost_writes", ">", 0, Run},
		{"sync_p99_ms>50", "sync_p99_ms", ">", 50, Run},
		{"write_p50_ms>5", "write_p50_ms", ">", 5, Run},
		{"target_cpu_cores>1.5", "target_cpu_cores", ">", 1.5, Run},
		{"p99_ms:ratio>1.1", "p99_ms", ">", 1.1, AB},
		{"rps:ratio<0.9", "rps", "<", 0.9, AB},
		{"allocs_per_req:ratio>=2", "allocs_per_req", ">=", 2, AB},
	} {
		got, err := Parse(tc.expr)
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if got.Metric != tc.metric || got.Op != tc.op || math.Abs(got.Value-tc.value) > 1e-12 || got.Family != tc.family || got.Expr != tc.expr {
			t.Errorf("%q: got %+v", tc.expr, got)
		}
	}
}

func TestParseEveryRunMetricAndOperator(t *testing.T) {
	for _, m := range RunMetrics {
		for _, op := range []string{">", ">=", "<", "<="} {
			got, err := Parse(m + op + "1")
			if err != nil || got.Metric != m || got.Op != op || got.Family != Run {
				t.Errorf("%s%s1: %+v %v", m, op, got, err)
			}
		}
	}
	for _, m := range ABMetrics {
		if got, err := Parse(m + ":ratio>1"); err != nil || got.Family != AB || got.Metric != m {
			t.Errorf("%s:ratio>1: %+v %v", m, got, err)
		}
	}
}

func TestParseFindingAndWordForms(t *testing.T) {
	for _, tc := range []struct {
		expr, finding, op, word string
		value                   float64
		family                  Family
	}{
		{"finding:load-time", "load-time", "", "", 0, Run},
		{"finding:repeated-gzip", "repeated-gzip", "", "", 0, Run},
		{"finding:repeated-gzip>10%", "repeated-gzip", ">", "", 0.1, Run},
		{"finding:repeated-gzip > 2.5%", "repeated-gzip", ">", "", 0.025, Run},
		{"regressed", "", "", "regressed", 0, AB},
		{"unverified", "", "", "unverified", 0, Run},
		{"worse", "", "", "worse", 0, AB},
		{" worse ", "", "", "worse", 0, AB},
	} {
		got, err := Parse(tc.expr)
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if got.Finding != tc.finding || got.Op != tc.op || got.Word != tc.word || math.Abs(got.Value-tc.value) > 1e-12 || got.Family != tc.family {
			t.Errorf("%q: got %+v", tc.expr, got)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"p98_ms>1", `unknown metric "p98_ms"`},
		{"p98_ms>1", "want errors, lost_writes, max_ms"}, // the known ones, sorted
		{"latency:ratio>1", `unknown before/after metric "latency"`},
		{"max_ms:ratio>1", `unknown before/after metric "max_ms"`}, // a run metric that ab does not compare
		{"cpu_per_req_ms>1", `unknown metric "cpu_per_req_ms"`},    // an ab metric on a run
		{"p99_ms>fast", "want METRIC>VALUE"},
		{"p99_ms=250", "want METRIC>VALUE"},
		{"p99_ms==250", "want METRIC>VALUE"},
		{"p99_ms!250", "want METRIC>VALUE"},
		{"p99_ms>", "want METRIC>VALUE"},
		{">250", "want METRIC>VALUE"},
		{"", "want METRIC>VALUE"},
		{"P99_MS>250", "want METRIC>VALUE"},
		{"p99_ms>250ms", "want METRIC>VALUE"},
		{"p99_ms>1.2.3", `"1.2.3" is not a number`},
		{"p99_ms>1e999", `"1e999" is not a number`}, // +Inf is no limit
		{"p99_ms>-1e999", `"-1e999" is not a number`},
		{"p99_ms>NaN", "want METRIC>VALUE"},
		{"p99_ms>Inf", "want METRIC>VALUE"},
		{"finding:", "want finding:CLASS or finding:RULE"},
		{"finding:Load_Time", "want finding:CLASS or finding:RULE"},
		{"finding:gzip>10", "want finding:CLASS or finding:RULE"},
		{"finding:gzip<10%", "want finding:CLASS or finding:RULE"},
		{"finding:gzip>1.2.3%", `"1.2.3" is not a number`},
		{"regressed>1", `unknown metric "regressed"`},
	} {
		_, err := Parse(tc.expr)
		if err == nil {
			t.Errorf("%q: no error", tc.expr)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), `"`) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line quoting it, with %q", tc.expr, err, tc.want)
		}
	}
}

func TestParseAllRefusesTheOtherFamily(t *testing.T) {
	if ts, err := ParseAll([]string{"p99_ms>1", "finding:load-time"}, Run); err != nil || len(ts) != 2 {
		t.Errorf("run thresholds on a run: %v %v", ts, err)
	}
	if ts, err := ParseAll([]string{"regressed", "worse", "rps:ratio<0.9"}, AB); err != nil || len(ts) != 3 {
		t.Errorf("ab thresholds on ab: %v %v", ts, err)
	}
	if ts, err := ParseAll(nil, Run); err != nil || ts != nil {
		t.Errorf("none: %v %v", ts, err)
	}
	for _, tc := range []struct {
		exprs  []string
		family Family
		want   string
	}{
		{[]string{"p99_ms>1", "regressed"}, Run, `"regressed" is for probe ab and probe compare`},
		{[]string{"p99_ms:ratio>1.1"}, Run, "is for probe ab and probe compare"},
		{[]string{"p99_ms>1"}, AB, `"p99_ms>1" is for a run's figures and findings`},
		{[]string{"finding:load-time"}, AB, "is for a run's figures and findings"},
		{[]string{"worse", "p98_ms>1"}, AB, `unknown metric "p98_ms"`},
	} {
		_, err := ParseAll(tc.exprs, tc.family)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v on %s: %v, want %q", tc.exprs, tc.family, err, tc.want)
		}
	}
}

func mustParse(t *testing.T, expr string) Threshold {
	t.Helper()
	th, err := Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// A figure equal to the limit breaks >= and <=, never > or <.
func TestBreaksAtTheBoundary(t *testing.T) {
	for _, tc := range []struct {
		expr  string
		v     float64
		broke bool
	}{
		{"p99_ms>250", 250, false},
		{"p99_ms>250", 250.0001, true},
		{"p99_ms>250", 249, false},
		{"p99_ms>=250", 250, true},
		{"p99_ms>=250", 249.999, false},
		{"rps<100", 100, false},
		{"rps<100", 99.99, true},
		{"rps<=100", 100, true},
		{"rps<=100", 100.01, false},
		{"errors>0.1%", 0.001, false},
		{"errors>0.1%", 0.0011, true},
		{"errors>=50%", 0.5, true},
		{"p99_ms>250", math.NaN(), false}, // the report could not tell
		{"p99_ms<250", math.NaN(), false},
		{"p99_ms>=250", math.NaN(), false},
		{"p99_ms>250", math.Inf(1), true},
		{"p99_ms<250", math.Inf(1), false},
		{"rps<100", math.Inf(-1), true},
		{"rps>=100", math.Inf(-1), false},
	} {
		if got := mustParse(t, tc.expr).Breaks(tc.v); got != tc.broke {
			t.Errorf("%s on %v: broken %v, want %v", tc.expr, tc.v, got, tc.broke)
		}
	}
}

func TestJudgeRunsMetrics(t *testing.T) {
	runs := []RunFigures{
		{Microload: "search", Requests: 2000, Errors: 3, Values: map[string]float64{"p99_ms": 312.4, "errors": 0.0015, "rps": 90}},
		{Microload: "page", Requests: 1000, Values: map[string]float64{"p99_ms": 250, "errors": 0, "rps": 150}},
		{Microload: "feed", Values: map[string]float64{"p99_ms": math.NaN()}},
	}
	ts := []Threshold{mustParse(t, "p99_ms>250"), mustParse(t, "errors>0.1%"), mustParse(t, "rps<100"), mustParse(t, "target_rss_mb>1")}
	verdicts, lines := JudgeRuns(ts, runs)
	if len(verdicts) != 4 {
		t.Fatalf("verdicts %+v", verdicts)
	}
	want := []string{
		"threshold p99_ms>250 broken: search: p99_ms is 312.4",
		"threshold errors>0.1% broken: search: errors is 0.15% (3 of 2000)",
		"threshold rps<100 broken: search: rps is 90",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for i, broken := range []bool{true, true, true, false} {
		if verdicts[i].Broken != broken || verdicts[i].Expr != ts[i].Expr || (len(verdicts[i].Breaches) > 0) != broken {
			t.Errorf("verdict %d: %+v", i, verdicts[i])
		}
	}
	// A metric no run can tell (no target process seen) holds.
	if verdicts[3].Broken {
		t.Errorf("an absent metric broke: %+v", verdicts[3])
	}
}

func TestJudgeRunsEveryRunBreaks(t *testing.T) {
	runs := []RunFigures{
		{Microload: "a", Values: map[string]float64{"p99_ms": 300}},
		{Microload: "b", Values: map[string]float64{"p99_ms": 400}},
	}
	v, lines := JudgeRuns([]Threshold{mustParse(t, "p99_ms>250")}, runs)
	if len(lines) != 2 || len(v[0].Breaches) != 2 || v[0].Breaches[1] != "b: p99_ms is 400" {
		t.Errorf("%+v %q", v, lines)
	}
	if v, lines := JudgeRuns(nil, runs); v != nil || lines != nil {
		t.Errorf("no thresholds: %+v %q", v, lines)
	}
	if v, lines := JudgeRuns([]Threshold{mustParse(t, "p99_ms>250")}, nil); len(v) != 1 || v[0].Broken || lines != nil {
		t.Errorf("no runs: %+v %q", v, lines)
	}
}

func TestJudgeRunsFindings(t *testing.T) {
	runs := []RunFigures{{Microload: "sitemap", Findings: []Finding{
		{Rule: "repeated-gzip", Class: "load-time", Endpoint: "/sitemap.xml", CPUShare: 0.42},
		{Rule: "repeated-json", Class: "load-time", Endpoint: "/sitemap.xml", CPUShare: 0.10},
		{Rule: "lock-contention", Class: "contention", Endpoint: "/", CPUShare: 0.5},
	}}}
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"finding:load-time", []string{"sitemap: repeated-gzip (load-time) on /sitemap.xml, 42% of the CPU",
			"sitemap: repeated-json (load-time) on /sitemap.xml, 10% of the CPU"}},
		{"finding:repeated-gzip", []string{"sitemap: repeated-gzip (load-time) on /sitemap.xml, 42% of the CPU"}},
		{"finding:repeated-gzip>10%", []string{"sitemap: repeated-gzip (load-time) on /sitemap.xml, 42% of the CPU"}},
		{"finding:repeated-gzip>42%", nil}, // equal to the share: holds
		{"finding:repeated-json>10%", nil},
		{"finding:load-time>20%", []string{"sitemap: repeated-gzip (load-time) on /sitemap.xml, 42% of the CPU"}},
		{"finding:fatal-stack", nil},
		{"finding:contention>0%", []string{"sitemap: lock-contention (contention) on /, 50% of the CPU"}},
	} {
		v, _ := JudgeRuns([]Threshold{mustParse(t, tc.expr)}, runs)
		if strings.Join(v[0].Breaches, "|") != strings.Join(tc.want, "|") || v[0].Broken != (len(tc.want) > 0) {
			t.Errorf("%s: %+v, want %q", tc.expr, v[0], tc.want)
		}
	}
}

// unverified breaks once per finding no verification confirmed, and holds
// for a run whose claims were all confirmed.
func TestJudgeRunsUnverified(t *testing.T) {
	runs := []RunFigures{{Microload: "http", Unverified: []string{"repeated-regexp-compile@main.grep (load-time) not-built: " +
		"`r` is a parameter of grep"}}, {Microload: "page"}}
	v, _ := JudgeRuns([]Threshold{mustParse(t, "unverified")}, runs)
	want := "http: repeated-regexp-compile@main.grep (load-time) not-built: `r` is a parameter of grep"
	if !v[0].Broken || len(v[0].Breaches) != 1 || v[0].Breaches[0] != want {
		t.Errorf("%+v, want one breach %q", v[0], want)
	}
	if v, _ := JudgeRuns([]Threshold{mustParse(t, "unverified")}, runs[1:]); v[0].Broken {
		t.Errorf("a run with every claim confirmed: %+v", v[0])
	}
}

func TestJudgeAB(t *testing.T) {
	p := 0.004
	ab := ABFigures{
		Regressed: []Regression{{Microload: "search", Rule: "repeated-gzip"}},
		Comparisons: []Comparison{
			{Microload: "search", Metric: "p99_ms", Ratio: 1.25, PValue: &p, Significant: true, Verdict: "worse"},
			{Microload: "page", Metric: "p99_ms", Ratio: 1.5, Significant: false, Verdict: "~"}, // not significant
			{Microload: "page", Metric: "rps", Ratio: 0.8, PValue: &p, Significant: true, Verdict: "worse"},
			{Microload: "feed", Metric: "p99_ms", Ratio: 1.1, PValue: &p, Significant: true, Verdict: "worse"},
			{Microload: "sitemap", Metric: "p99_ms", Ratio: 0.5, PValue: &p, Significant: true, Verdict: "better"},
		},
	}
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"regressed", []string{"search: repeated-gzip regressed"}},
		{"worse", []string{"search: p99_ms worse, ×1.25", "page: rps worse, ×0.80", "feed: p99_ms worse, ×1.10"}},
		{"p99_ms:ratio>1.1", []string{"search: p99_ms ×1.25 (p=0.004)"}}, // feed's 1.1 is the limit
		{"p99_ms:ratio>=1.1", []string{"search: p99_ms ×1.25 (p=0.004)", "feed: p99_ms ×1.10 (p=0.004)"}},
		{"p99_ms:ratio<0.6", []string{"sitemap: p99_ms ×0.50 (p=0.004)"}},
		{"rps:ratio<0.9", []string{"page: rps ×0.80 (p=0.004)"}},
		{"allocs_per_req:ratio>1", nil},
	} {
		v, lines := JudgeAB([]Threshold{mustParse(t, tc.expr)}, ab)
		if strings.Join(v[0].Breaches, "|") != strings.Join(tc.want, "|") || len(lines) != len(tc.want) {
			t.Errorf("%s: %+v, want %q", tc.expr, v[0], tc.want)
		}
	}
	if v, _ := JudgeAB([]Threshold{mustParse(t, "regressed"), mustParse(t, "worse")}, ABFigures{}); v[0].Broken || v[1].Broken {
		t.Errorf("nothing changed: %+v", v)
	}
	// A significant change without a p-value (single runs) still prints.
	untested := ABFigures{Comparisons: []Comparison{{Microload: "m", Metric: "p99_ms", Ratio: 2, Significant: true}}}
	if v, _ := JudgeAB([]Threshold{mustParse(t, "p99_ms:ratio>1")}, untested); !v[0].Broken || !strings.Contains(v[0].Breaches[0],
		"p=untested") {
		t.Errorf("untested: %+v", v)
	}
	nan := ABFigures{Comparisons: []Comparison{{Microload: "m", Metric: "p99_ms", Ratio: math.NaN(), Significant: true}}}
	if v, _ := JudgeAB([]Threshold{mustParse(t, "p99_ms:ratio>1")}, nan); v[0].Broken {
		t.Errorf("a NaN ratio broke: %+v", v)
	}
}
