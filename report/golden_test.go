package report

import (
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/report/internal/reporttest"
	"github.com/probehq/probe/result"
)

func golden(t *testing.T, name, got string) {
	t.Helper()
	reporttest.Golden(t, name, got)
}

func table(d Document) string { return reporttest.Table(d) }

// goldenRun is a profiled run with every part a report can show.
func goldenRun() *Run {
	lat := make([]int64, 0, 200)
	for i := int64(1); i <= 200; i++ {
		lat = append(lat, 500*i)
	}
	run := sampleRun("sitemap", lat...)
	run.TargetProc = &result.ProcStats{PID: 4242, CPU: 1500 * time.Millisecond, MaxRSS: 80 << 20, MaxThreads: 9, MaxFDs: 21}
	run.Decoded, run.WireBytes = 4<<20, 1<<20
	goldenPerSecond(run)
	a := Analysis{
		Findings: []analyzers.Finding{{Rule: "repeated-reply", Class: "load-time", Severity: "high", CPUShare: 0.7, CPUShareOfRequests: 0.8,
			Frames: []string{"app.(*Site).sitemap"}, Endpoint: "GET /x", OwnFrame: "app.(*Site).sitemap",
			Evidence:   "building a reply that was byte-identical every time: every one of the 200 replies of GET /x was byte-identical",
			Suggestion: "Build the reply once and serve the cache."},
			{Rule: "repeated-gzip", PartOf: "repeated-reply", Class: "load-time", Severity: "high", CPUShare: 0.62, AllocShare: 0.4,
				CPUShareOfRequests: 0.7, Frames: []string{"compress/flate.(*compressor).deflate", "compress/gzip.(*Writer).Write",
					"app.(*Site).sitemap", "app.(*Site).ServeHTTP"},
				Endpoint: "GET /x", Evidence: "compressing: 62% of the target's CPU; each of 1 request keys got the same reply every " +
					"time (200 requests)",
				Suggestion: "Compress the reply once when its content changes.", OwnFrame: "app.(*Site).sitemap"}},
		Unexplained: []analyzers.Unexplained{{Function: "app.buildItems",
			Path: []string{"app.(*Site).ServeHTTP", "app.feedHandler", "app.buildItems"}, CPUShare: 0.21,
			Callees: []analyzers.Callee{{Function: "encoding/csv.(*Reader).ReadAll", CPUShare: 0.18}}, LooksLike: "looks like it reads csv"}},
		CPU: &analyzers.CPUSplit{Total: 1.5, Serving: 1.2, GC: 0.1, Idle: 0.05, Runtime: 0.05, Background: 0.1, Measuring: 0.02},
		Timeline: []analyzers.WindowSummary{{Window: 1,
			Top: []analyzers.ShareOfWork{{Work: "repeated-gzip", Share: 0.6}, {Work: "other", Share: 0.4}}}},
		Crashes: []Crash{{Class: "hang", Input: "the sitemap load", Endpoint: "GET /x", Evidence: "3 requests got no reply " +
			"within the timeout while the target's process lived"}},
		Warnings: []result.Warning{{Kind: "profile-partial", Message: "the CPU profile covers 0.5s of the 1.5s of CPU"}},
		Files:    map[string][]byte{"cpu.pb.gz": []byte("x"), "flame.html": []byte("<html>")},
	}
	return FromRun(run, a)
}

func TestGoldenRun(t *testing.T) {
	r := goldenRun()
	golden(t, "run.md", r.Markdown())
	golden(t, "run.table", table(r))
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "run.json", string(js))
}

func TestGoldenSuite(t *testing.T) {
	s := NewSuite("http://127.0.0.1:1", []*Run{goldenRun(), FromRun(sampleRun("page", 3000, 4000, 5000), Analysis{})})
	golden(t, "suite.md", s.Markdown())
	golden(t, "suite.table", table(s))
}
