package report

import (
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes/fuzz"
)

// The golden files golden_test.go leaves out: report.json of a suite, a
// comparison and a fuzz run, and every format of probe analyze's report.
// (A run and a suite have no HTML page: report.md is theirs.)

func TestGoldenSuiteJSON(t *testing.T) {
	s := NewSuite("http://127.0.0.1:1", []*RunReport{goldenRun(), FromRun(sampleRun("page", 3000, 4000, 5000), Analysis{})})
	goldenJSON(t, "suite.json", s)
}

func TestGoldenABJSON(t *testing.T) {
	ab := buildAB(sampleSides())
	ab.Order = "interleaved A B A B"
	goldenJSON(t, "ab.json", ab)
}

// goldenFuzzHTTP is a probe fuzz http run with a header and a JSON body
// that found a panic and then ended early: the parts TestGoldenFuzz's
// notequery run does not have.
func goldenFuzzHTTP(t *testing.T) *FuzzReport {
	tmpl, err := fuzz.NewTemplate("POST", "/items?page={int}", []fuzz.Field{{Name: "X-Tenant", Value: "{str}"}}, `{"name": {str}}`)
	if err != nil {
		t.Fatal(err)
	}
	in := fuzz.Input{Template: 0, Values: []string{"-1", "a", ""}}
	res := &fuzz.Result{Target: "http://127.0.0.1:41001", Templates: []*fuzz.Template{tmpl},
		Search: 7 * time.Second, Shrinking: 2 * time.Second, Inputs: 310, Statuses: map[int]int64{200: 280, 400: 20},
		Failures: map[string]int64{"400 bad page": 20, "no reply: connection reset by peer": 10}, Restarts: 10, Hostile: 20, Extremes: 12, Unsent: 3,
		Crashes: []*fuzz.Crash{{Class: "panic", Evidence: "panic: runtime error: index out of range [-1]",
			Frames: []string{"main.listItems", "main.main.func1"},
			Stderr: "panic: runtime error: index out of range [-1]\n\ngoroutine 7 [running]:\nmain.listItems(...)\n",
			Input:  in, Original: fuzz.Input{Template: 0, Values: []string{"-90210", "tenant-7", "widget"}},
			Method: "POST", Path: "/items?page=-1", Header: []fuzz.Field{{Name: "X-Tenant", Value: "a"}}, Body: []byte(`{"name": ""}`),
			Hole: "{int}", Endpoint: "/items", FoundAfter: 1200 * time.Millisecond, Seen: 10, Confirmed: true, Trials: 14,
			Shrink: "shrunk from 21 to 5 bytes of values in 14 trials"}},
		Ended: "the target failed to restart 3 times in a row",
	}
	return FromFuzz(res, FuzzSetting{Name: "fuzz http", Concurrency: 2, MemLimit: 3 << 30,
		Server: "(ulimit -v 3145728; PORT=8080 ./server -addr 127.0.0.1:8080)", ReproBase: "http://127.0.0.1:8080"})
}

func TestGoldenFuzzHTTP(t *testing.T) {
	r := goldenFuzzHTTP(t)
	goldenJSON(t, "fuzz-http.json", r)
	golden(t, "fuzz-http.md", r.Markdown())
	golden(t, "fuzz-http.table", table(r))
	files, _ := r.Files()
	golden(t, "fuzz-http.crasher", string(files["crashers/1-panic.txt"]))
}

// goldenProfileFindings is what probe analyze finds in two profiles.
func goldenProfileFindings() *ProfileFindings {
	return &ProfileFindings{Profiles: []string{"cpu.pb.gz", "heap.pb.gz"},
		Findings: []analyzers.Finding{{Rule: "repeated-template-parse", Class: "load-time", Severity: "high", CPUShare: 0.41, AllocShare: 0.55,
			Frames:   []string{"text/template/parse.(*Tree).Parse", "html/template.(*Template).Parse", "app.renderPage", "app.(*Site).ServeHTTP"},
			Evidence: "parsing templates: 41% of the CPU in the profile", Suggestion: "Parse the templates once, at start.", OwnFrame: "app.renderPage"},
			{Rule: "log-storm", Class: "load-time", Severity: "medium", CPUShare: 0.12, AllocShare: 0.08,
				Frames:   []string{"log.(*Logger).output", "log.Printf", "app.(*Site).ServeHTTP"},
				Evidence: "logging: 12% of the CPU in the profile", Suggestion: "Log less per request, or sample.", OwnFrame: "app.(*Site).ServeHTTP"}},
		Unexplained: []analyzers.Unexplained{{Function: "app.score", Path: []string{"app.(*Site).ServeHTTP", "app.search", "app.rank", "app.score"}, CPUShare: 0.18}},
	}
}

func TestGoldenProfileFindings(t *testing.T) {
	p := goldenProfileFindings()
	goldenJSON(t, "analyze.json", p)
	golden(t, "analyze.md", p.Markdown())
	golden(t, "analyze.table", table(p))
	none := &ProfileFindings{Profiles: []string{"cpu.pb.gz"}}
	goldenJSON(t, "analyze-none.json", none)
	golden(t, "analyze-none.md", none.Markdown())
	golden(t, "analyze-none.table", table(none))
}

func goldenJSON(t *testing.T, name string, d Document) {
	t.Helper()
	js, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, name, string(js))
}
