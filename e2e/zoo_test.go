package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/target"
)

// zooCase is one labelled endpoint of testdata/zoo: a waste case names the
// rule probe must find on it (and the classes it may have); a clean case
// names none, and no finding on it may claim load time.
type zooCase struct {
	path, method, body string
	param              string // name=v1,v2,…: each request puts the next value in
	fast               bool   // on the fasthttp server
	rule               string
	classes            []string // default load-time
}

func (c zooCase) name() string {
	if c.fast {
		return "fasthttp " + c.path
	}
	return c.path
}

var zooCases = []zooCase{
	{path: "/waste/gzip", rule: "repeated-gzip"},
	{path: "/waste/klauspost-gzip", rule: "repeated-gzip"},
	{path: "/waste/brotli", rule: "repeated-gzip"},
	{path: "/waste/zstd", rule: "repeated-gzip"},
	{path: "/gzip", fast: true, rule: "repeated-gzip"},
	{path: "/waste/json/std", rule: "repeated-json-encode"},
	{path: "/waste/json/goccy", rule: "repeated-json-encode"},
	{path: "/waste/json/jsoniter", rule: "repeated-json-encode"},
	{path: "/waste/json/segmentio", rule: "repeated-json-encode"},
	{path: "/waste/json/sonic", rule: "repeated-json-encode"},
	{path: "/waste/json/v2", rule: "repeated-json-encode"},
	{path: "/waste/json/easyjson", rule: "repeated-json-encode"},
	{path: "/waste/config/std", rule: "repeated-json-decode"},
	{path: "/waste/config/goccy", rule: "repeated-json-decode"},
	{path: "/waste/config/jsoniter", rule: "repeated-json-decode"},
	{path: "/waste/config/segmentio", rule: "repeated-json-decode"},
	{path: "/waste/config/sonic", rule: "repeated-json-decode"},
	{path: "/waste/config/v2", rule: "repeated-json-decode"},
	{path: "/waste/schema/invopop", rule: "repeated-schema"},
	{path: "/waste/schema/santhosh", rule: "repeated-schema"},
	{path: "/waste/schema/gojsonschema", rule: "repeated-schema"},
	{path: "/waste/schema/google", rule: "repeated-schema"},
	{path: "/waste/schema/kaptinlin", rule: "repeated-schema"},
	{path: "/waste/tmpl/html", rule: "repeated-template-parse"},
	{path: "/waste/tmpl/jet", rule: "repeated-template-parse"},
	{path: "/waste/tmpl/pongo2", rule: "repeated-template-parse"},
	{path: "/waste/md/goldmark", rule: "repeated-markdown-render"},
	{path: "/waste/md/blackfriday", rule: "repeated-markdown-render"},
	{path: "/waste/md/gomarkdown", rule: "repeated-markdown-render"},
	{path: "/waste/xml", rule: "repeated-xml-encode"},
	{path: "/waste/feeds", rule: "repeated-xml-encode"},
	{path: "/waste/sql/std", rule: "repeated-db-query"},
	{path: "/waste/sql/sqlx", rule: "repeated-db-query"},
	{path: "/waste/sql/gorm", rule: "repeated-db-query"},
	{path: "/waste/regexp/std", rule: "repeated-regexp-compile"},
	{path: "/waste/regexp/regexp2", rule: "repeated-regexp-compile"},
	{path: "/waste/log/std", rule: "log-storm"},
	{path: "/waste/log/slog", rule: "log-storm"},
	{path: "/waste/log/zap", rule: "log-storm"},
	{path: "/waste/log/zerolog", rule: "log-storm"},
	{path: "/waste/log/logrus", rule: "log-storm"},
	{path: "/waste/search/bleve", rule: "search-highlight-doc-load"},
	{path: "/waste/sort/reflect", rule: "repeated-sort"},
	{path: "/waste/scan", rule: "per-request-full-scan"},
	{path: "/waste/feed/handbuilt", rule: "repeated-reply"},
	{path: "/waste/nonce", rule: "repeated-db-query"},
	{path: "/waste/shuffle", rule: "repeated-markdown-render"},

	// Kinds of waste no rule of the catalog names: found by the
	// repeated-work mechanism (replies the same but for a nonce or a
	// timestamp), with no rule per library.
	{path: "/waste/unnamed/csv", rule: "repeated-work"},
	{path: "/waste/unnamed/gob", rule: "repeated-work"},
	{path: "/waste/unnamed/xml-decode", rule: "repeated-work"},
	{path: "/waste/unnamed/asn1", rule: "repeated-work"},
	{path: "/waste/unnamed/replacer", rule: "repeated-work"},
	{path: "/waste/unnamed/collate", rule: "repeated-work"},
	{path: "/waste/unnamed/norm", rule: "repeated-work"},
	{path: "/waste/unnamed/bigint", rule: "repeated-work"},
	{path: "/waste/unnamed/cron", rule: "repeated-work"},
	{path: "/waste/unnamed/uritemplate", rule: "repeated-work"},
	{path: "/waste/unnamed/protobuf", rule: "repeated-work"},
	{path: "/waste/unnamed/x509", rule: "repeated-work"},
	{path: "/waste/unnamed/goparser", rule: "repeated-work"},
	{path: "/waste/unnamed/render", rule: "repeated-work"},

	{path: "/clean/rpc", method: "POST", body: `{"jsonrpc":"2.0","id":7,"method":"notes/search","params":{"q":"gzip","page":2}}`},
	{path: "/rpc", fast: true, method: "POST", body: `{"jsonrpc":"2.0","id":7,"method":"notes/search","params":{"q":"gzip","page":2}}`},
	{path: "/clean/token", param: "user=ann,bob,cy,dee,eve,fay,gus,hal"},
	{path: "/clean/report", param: "month=2024-01,2024-02,2024-03,2024-04,2024-05,2024-06,2024-07,2024-08"},
	{path: "/clean/arith", param: "n=200000,200001,200002,200003,200004,200005,200006,200007"},
	{path: "/clean/logline", param: "user=ann,bob,cy,dee,eve,fay,gus,hal"},
	{path: "/clean/random"},
	{path: "/clean/static-gzip"},
	{path: "/clean/static-json"},
	{path: "/clean/note", param: "id=1,2,3,4,5,6,7,8,9,10,11,12"},
	{path: "/clean/tags", param: "tag=go,travel,food,music,books,code,ops,notes"},

	// The same work as the unnamed waste, on what varies with the request:
	// its body, its query, the data each user stored.
	{path: "/clean/unnamed/csv-body", method: "POST", body: zooRatesCSV(',', "\n", 1, 1500)},
	{path: "/clean/unnamed/xml-body", method: "POST", body: zooBackendsXML()},
	{path: "/clean/unnamed/csv-query", param: "rows=" + zooRatesParam()},
	{path: "/clean/unnamed/bigint", param: "n=30000,30001,30002,30003,30004,30005,30006,30007"},
	{path: "/clean/unnamed/norm-query", param: "text=Crème brûlée,Ångström façade,naïve Straße,ﬁnance Ⅻ,Œuvre " +
		"jalapeño,Zürich Øresund,Café Müller,Señor Ñandú"},
	{path: "/clean/unnamed/user-cron", param: "user=ann,bob,cy,dee,eve,fay,gus,hal"},
	{path: "/clean/unnamed/user-replacer", param: "user=ann,bob,cy,dee,eve,fay,gus,hal"},
	{path: "/clean/unnamed/user-uri", param: "user=ann,bob,cy,dee,eve,fay,gus,hal"},
}

// zooRatesCSV is a rates table of four columns, seeded.
func zooRatesCSV(comma rune, newline string, seed, rows int) string {
	var b strings.Builder
	for i := range rows {
		fmt.Fprintf(&b, "EUR%c%d-C%03d%c%d.%02d%cnote %d%s", comma, seed, i, comma, (i*seed)%9, (i*37+seed)%100, comma, i, newline)
	}
	return b.String()
}

// zooRatesParam is eight CSV tables as values of one query parameter
// (rows by '|', fields by ';').
func zooRatesParam() string {
	var vs []string
	for seed := 1; seed <= 8; seed++ {
		vs = append(vs, strings.TrimSuffix(zooRatesCSV(';', "|", seed, 120), "|"))
	}
	return strings.Join(vs, ",")
}

func zooBackendsXML() string {
	var b strings.Builder
	b.WriteString(`<config name="yours"><backends>`)
	for i := range 300 {
		fmt.Fprintf(&b, `<backend name="b%d"><url>http://10.1.%d.%d:80/</url><weight>%d</weight><headers><header>X-A: `+
			`%d</header></headers></backend>`, i, i/250, i%250, 1+i%3, i)
	}
	b.WriteString(`</backends></config>`)
	return b.String()
}

// zooResult is what probe found on one case.
type zooResult struct {
	c        zooCase
	findings []analyzers.Finding
	hit      bool   // a waste case got its rule with an accepted class; a clean case got no load-time claim
	got      string // the findings in short
	// unexplained is the run's unexplained CPU and reply digests, to say
	// why a case was missed
	unexplained string
	thin        string // the run's thin-profile warning: too little CPU to name a work
}

// buildZoo builds testdata/zoo, a module of its own that needs Go 1.27.
func buildZoo(t *testing.T) string {
	t.Helper()
	return goBuild(t, "testdata/zoo", ".", "zoo", "GOFLAGS=-mod=mod")
}

// runZoo starts the zoo and runs probe's pipeline on every case, d each.
func runZoo(t *testing.T, d time.Duration) (results []zooResult, stale []analyzers.Finding) {
	bin := buildZoo(t)
	fastAddr := freeAddr(t)
	child := startChild(t, target.ChildSpec{Argv: []string{bin, "-addr", "127.0.0.1:0", "-fasthttp", fastAddr}, Wait: time.Minute})
	defer child.Stop()
	base, _ := url.Parse(child.URL)
	fast, _ := url.Parse("http://" + fastAddr)
	p := pipeline.New(pipeline.Options{Rules: analyzers.DefaultRules()})
	o := probes.LoadOptions{Concurrency: 4, Duration: d, Warmup: d / 3, Timeout: 30 * time.Second}
	// What probe's --profile gives without --wall: CPU and heap from
	// /debug/pprof/, in windows of half the run (1 s to 5 s).
	prof := &target.ProfileOptions{PprofURL: base.JoinPath("/debug/pprof/"), Window: min(5*time.Second, max(time.Second, d/2))}
	measure := func(c zooCase, profiled bool) *report.Run {
		ml := &probes.HTTP{Method: c.method, Path: c.path}
		if ml.Method == "" {
			ml.Method = "GET"
		}
		if c.body != "" {
			ml.Body = []byte(c.body)
			ml.Header = append(ml.Header, probesHeader("Content-Type", "application/json"))
		}
		if c.param != "" {
			ml.Param, ml.Values, _ = probes.ParseParam(c.param)
		}
		tgt := &probes.Target{URL: base, Child: child}
		if c.fast {
			tgt = &probes.Target{URL: fast, Child: child}
		}
		oo := o
		if profiled {
			oo.Profile = prof
		}
		rep, _, err := p.Measure(context.Background(), c.name(), ml, tgt, oo)
		if err != nil {
			t.Fatalf("%s: %v", c.name(), err)
		}
		return rep
	}
	only := os.Getenv("PROBE_ZOO_ONLY")
	for _, c := range zooCases {
		if !strings.Contains(c.path, only) {
			continue
		}
		rep := measure(c, true)
		r := zooResult{c: c, findings: rep.Findings}
		var parts []string
		for _, f := range rep.Findings {
			parts = append(parts, fmt.Sprintf("%s(%s %.0f%%)", f.Rule, f.Class, 100*max(f.CPUShare, f.AllocShare)))
		}
		r.got = strings.Join(parts, " ")
		// PROBE_ZOO_EVIDENCE=1 logs each finding's evidence; =DIR also keeps
		// each case's CPU profile there, to read with go tool pprof.
		if os.Getenv("PROBE_ZOO_EVIDENCE") != "" {
			for _, f := range rep.Findings {
				t.Logf("%s %s: %s", c.name(), f.Rule, f.Evidence)
			}
		}
		if rep.Latency.Errors > 0 {
			r.got += fmt.Sprintf(" [%d errors: %v]", rep.Latency.Errors, rep.Errors)
		}
		r.hit = judgeZoo(c, rep.Findings)
		// Each share is what pprof -focus shows of the same profile.
		if files, err := rep.Files(); err == nil && len(files["cpu.pb.gz"]) > 0 {
			cpu := filepath.Join(t.TempDir(), "cpu.pb.gz")
			if err := os.WriteFile(cpu, files["cpu.pb.gz"], 0o644); err != nil {
				t.Fatal(err)
			}
			checkSharesAgainstPprof(t, c.name(), cpu, rep.Findings)
			if d := os.Getenv("PROBE_ZOO_EVIDENCE"); d != "" && d != "1" {
				os.WriteFile(filepath.Join(d, strings.ReplaceAll(strings.Trim(c.path, "/"), "/", "-")+".pb.gz"), files["cpu.pb.gz"], 0o644)
			}
		}
		for _, w := range rep.Warnings {
			r.unexplained += fmt.Sprintf(" [%s: %s]", w.Kind, w.Message)
			if w.Kind == "thin-profile" {
				r.thin = w.Message
			}
		}
		for _, u := range rep.Unexplained {
			r.unexplained += fmt.Sprintf(" %s %.0f%% (%s)", u.Function, 100*u.CPUShare, u.CallsInWords())
		}
		for _, d := range rep.ReplyDigests {
			r.unexplained += fmt.Sprintf(" [key %s: %d requests, %d distinct]", d.Key, d.Requests, d.Distinct)
		}
		results = append(results, r)
	}
	// Allocations left from an earlier run: XML allocated by one load
	// must not show in the next, which does none.
	measure(zooCase{path: "/waste/allocate-xml"}, false)
	stale = measure(zooCase{path: "/clean/cheap"}, true).Findings
	return results, stale
}

func judgeZoo(c zooCase, fs []analyzers.Finding) bool {
	if c.rule == "" {
		for _, f := range fs {
			if f.Class == "load-time" {
				return false
			}
		}
		return true
	}
	classes := c.classes
	if len(classes) == 0 {
		classes = []string{"load-time"}
	}
	for _, f := range fs {
		if f.Rule != c.rule {
			continue
		}
		if c.fast && f.CPUShareOfRequests == 0 { // fasthttp's serving frames are request handling
			return false
		}
		for _, cl := range classes {
			if f.Class == cl {
				return true
			}
		}
	}
	return false
}

func probesHeader(k, v string) h1.Field { return h1.Field{Name: k, Value: v} }

// zooTable is the scores as docs/BENCHMARKS.md shows them.
func zooTable(results []zooResult, stale []analyzers.Finding) string {
	var b strings.Builder
	waste, wasteHit, clean, cleanOK := 0, 0, 0, 0
	b.WriteString("| endpoint | expected | found | |\n|---|---|---|---|\n")
	for _, r := range results {
		want := "no load-time claim"
		if r.c.rule != "" {
			want = r.c.rule
			waste++
			if r.hit {
				wasteHit++
			}
		} else {
			clean++
			if r.hit {
				cleanOK++
			}
		}
		mark := "✓"
		if !r.hit {
			mark = "✗"
		}
		got := r.got
		if got == "" {
			got = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.c.name(), want, got, mark)
	}
	staleOK := true
	for _, f := range stale {
		staleOK = staleOK && f.Rule != "repeated-xml-encode"
	}
	uw, uwHit, uc, ucOK := 0, 0, 0, 0 // the kinds no rule names, and their twins
	for _, r := range results {
		switch {
		case strings.HasPrefix(r.c.path, "/waste/unnamed/"):
			uw++
			uwHit += map[bool]int{true: 1}[r.hit]
		case strings.HasPrefix(r.c.path, "/clean/unnamed/"):
			uc++
			ucOK += map[bool]int{true: 1}[r.hit]
		}
	}
	if uw+uc > 0 {
		fmt.Fprintf(&b, "\nWaste of kinds no rule names (`/waste/unnamed/`, found by the repeated-work mechanism, no rule per "+
			"library): %d of %d. Their clean twins (the same work on the request's body, its query or per-user data) with no "+
			"load-time claim: %d of %d.\n",
			uwHit, uw, ucOK, uc)
	}
	fmt.Fprintf(&b, "\nRecall on the waste cases: %d of %d (%.0f%%). Precision on the clean cases (no load-time claim): %d of "+
		"%d. Allocations of an earlier run (XML) in the next: %s.\n",
		wasteHit, waste, 100*float64(wasteHit)/float64(waste), cleanOK, clean, map[bool]string{true: "none", false: "shown"}[staleOK])
	return b.String()
}

// TestZoo runs probe on every labelled endpoint of testdata/zoo: every
// waste case must get its rule, no clean case a load-time claim, and an
// earlier run's allocations must not show in the next.
// PROBE_ZOO_TABLE=FILE writes the table (bench/zoo.sh uses it);
// PROBE_ZOO_DURATION sets each run's measured time (default 1.5s);
// PROBE_ZOO_ONLY=TEXT runs only the cases whose path holds TEXT.
func TestZoo(t *testing.T) {
	d := 1500 * time.Millisecond
	if s := os.Getenv("PROBE_ZOO_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	results, stale := runZoo(t, d)
	table := zooTable(results, stale)
	t.Log("\n" + table)
	if f := os.Getenv("PROBE_ZOO_TABLE"); f != "" {
		os.WriteFile(f, []byte(table), 0o644)
	}
	waste, unjudged := 0, 0
	for _, r := range results {
		for _, f := range r.findings {
			if f.Rule == analyzers.RepeatedWorkRule {
				t.Logf("%s: %s [%s] %s", r.c.name(), f.Rule, f.Class, f.Evidence)
			}
		}
		if r.c.rule != "" {
			waste++
		}
		if !r.hit {
			if r.c.rule != "" && r.thin != "" {
				// A machine busy enough to starve the target names
				// nothing, and the report says so: unjudged, not missed.
				unjudged++
				t.Logf("%s: unjudged, %s", r.c.name(), r.thin)
			} else if r.c.rule != "" {
				t.Errorf("%s: no %s among %s; unexplained:%s", r.c.name(), r.c.rule, r.got, r.unexplained)
			} else {
				t.Errorf("%s: a load-time claim on a clean case: %s", r.c.name(), r.got)
			}
		}
	}
	if unjudged*10 > waste {
		t.Errorf("%d of %d waste cases had too little CPU to name a work: the machine was too busy to judge the zoo", unjudged, waste)
	}
	for _, f := range stale {
		if f.Rule == "repeated-xml-encode" {
			t.Errorf("an earlier run's XML allocations were taken for this run's: %+v", f)
		}
	}
}
