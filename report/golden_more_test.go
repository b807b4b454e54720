package report

import (
	"testing"

	"github.com/probehq/probe/analyzers"
)

// The golden files golden_test.go leaves out: report.json of a suite, a
// comparison and a fuzz run, and every format of probe analyze's report.
// (A run and a suite have no HTML page: report.md is theirs.)

func TestGoldenSuiteJSON(t *testing.T) {
	s := NewSuite("http://127.0.0.1:1", []*Run{goldenRun(), FromRun(sampleRun("page", 3000, 4000, 5000), Analysis{})})
	goldenJSON(t, "suite.json", s)
}

// goldenProfileFindings is what probe analyze finds in two profiles.
func goldenProfileFindings() *ProfileFindings {
	return &ProfileFindings{Profiles: []string{"cpu.pb.gz", "heap.pb.gz"},
		Findings: []analyzers.Finding{{Rule: "repeated-template-parse", Class: "load-time", Severity: "high", CPUShare: 0.41, AllocShare: 0.55,
			Frames:   []string{"text/template/parse.(*Tree).Parse", "html/template.(*Template).Parse", "app.renderPage", "app.(*Site).ServeHTTP"},
			Evidence: "parsing templates: 41% of the CPU in the profile", Suggestion: "Parse the templates once, at start.",
			OwnFrame: "app.renderPage"},
			{Rule: "log-storm", Class: "load-time", Severity: "medium", CPUShare: 0.12, AllocShare: 0.08,
				Frames:   []string{"log.(*Logger).output", "log.Printf", "app.(*Site).ServeHTTP"},
				Evidence: "logging: 12% of the CPU in the profile", Suggestion: "Log less per request, or sample.", OwnFrame: "app.(*Site).ServeHTTP"}},
		Unexplained: []analyzers.Unexplained{{Function: "app.score",
			Path: []string{"app.(*Site).ServeHTTP", "app.search", "app.rank", "app.score"}, CPUShare: 0.18,
			OwnShare: 0.15}},
		CPU: &analyzers.CPUSplit{Total: 30, Serving: 24, GC: 3, Idle: 1, Runtime: 1, Background: 1},
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
