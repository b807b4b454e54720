package pipeline

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/result"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/internal/enginetest"
	"github.com/probehq/probe/internal/proftest"
	"github.com/probehq/probe/probes/production"
)

// compare --from reduces each window as it comes (compare's
// TestSideKeepsNoWindow holds the side's bounds): windows fetched from a
// profiler of many one-frame samples each end as a side whose windows
// merged were dropped, no differential flame graph, and a warning.
func TestCompareSideKeepsNoWindow(t *testing.T) {
	const windows, perWindow = 12, 10_000
	st := &enginetest.Store{}
	start := time.Now().Add(-time.Hour).Truncate(time.Minute)
	for w := range windows {
		st.Add(enginetest.Entry{Name: "process_cpu", Time: start.Add(time.Duration(w)*time.Minute + time.Second),
			Profile: proftest.ManyOneFrame(w, perWindow), Labels: map[string]string{"job": "shop"}})
	}
	srv := httptest.NewServer(st.Parca())
	defer srv.Close()
	src, err := production.ParseSource("parca://" + strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	q := production.Query{Service: "shop", Type: "cpu"}
	side := NewCompareSide(3 * perWindow)
	ws, err := FetchWindows(context.Background(), src, q, Window{Start: start, End: start.Add(windows * time.Minute)}, windows, side)
	if err != nil || len(ws) != 0 {
		t.Fatalf("%v %v", err, ws)
	}
	if side.Windows() != windows {
		t.Fatalf("%d windows", side.Windows())
	}
	if !side.TooMany() {
		t.Errorf("the windows merged are kept past %d samples", side.MaxSamples())
	}
	ab, err := CompareProduction("shop", "a", "b", side, side, nil)
	if err != nil {
		t.Fatal(err)
	}
	said := false
	for _, w := range ab.Warnings {
		said = said || w.Kind == "no-diff-flame" && strings.Contains(w.Message, "over 30,000 samples")
	}
	if files, _ := ab.Files(); !said || len(files["flame-diff-shop.html"]) != 0 {
		t.Errorf("warnings %+v, %d files", ab.Warnings, len(files))
	}
}

// A run's analysis that Ctrl-C or SIGTERM ends returns what it had with
// an analysis-interrupted warning, no timeline and no flame graph; a
// run interrupted during its load is analysed whole (its context has
// ended already: the analysis does not take that as its own end).
func TestRunAnalysisInterrupted(t *testing.T) {
	cpu := proftest.ManyOneFrame(0, 100) // main.render: 1 s, half the CPU
	run := &result.Run{Errors: map[string]int64{}, Profiles: &result.Profiles{CPU: cpu, Windows: []*profile.Profile{cpu}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := AnalyzeRunContext(ctx, run, analyzers.DefaultRules())
	if len(a.Warnings) != 1 || a.Warnings[0].Kind != "analysis-interrupted" || a.Timeline != nil || len(a.Files) != 0 {
		t.Errorf("interrupted: warnings %+v, timeline %v, %d files", a.Warnings, a.Timeline, len(a.Files))
	}
	a = AnalyzeRunContext(analysisContext(ctx), run, analyzers.DefaultRules())
	if len(a.Warnings) != 0 || a.Timeline == nil || len(a.Files["flame.html"]) == 0 || len(a.Unexplained) == 0 {
		t.Errorf("after an interrupted load: warnings %+v, timeline %v, %d files, unexplained %+v", a.Warnings, a.Timeline, len(a.Files),
			a.Unexplained)
	}
}
