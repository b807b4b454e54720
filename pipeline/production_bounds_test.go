package pipeline

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/internal/enginetest"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/production"
)

// manyOneFrame is a CPU profile of n one-frame samples, each of a
// function of its own (window w's), and one sample of main.render holding
// as much CPU as all of them.
func manyOneFrame(w, n int) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
	}
	add := func(name string, v int64) {
		fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, Filename: "/work/app/main.go"}
		loc := &profile.Location{ID: fn.ID, Line: []profile.Line{{Function: fn}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{v / 10_000_000, v}})
	}
	for i := range n {
		add(fmt.Sprintf("main.w%df%d", w, i), 10_000_000)
	}
	add("main.render", int64(n)*10_000_000)
	return p
}

// compare --from reduces each window as it comes: a profiler whose
// windows are each many one-frame samples of functions of their own
// leaves the side holding no window's profile, each window's figures
// and the side's sums bounded by the functions kept, and the windows
// merged dropped once they hold more samples than one profile may (no
// differential flame graph, and a warning). It held every window (4 GB
// after 8 of 24 windows of 2.7 million samples).
func TestCompareSideKeepsNoWindow(t *testing.T) {
	const windows, perWindow = 12, 10_000
	st := &enginetest.Store{}
	start := time.Now().Add(-time.Hour).Truncate(time.Minute)
	for w := range windows {
		st.Add(enginetest.Entry{Name: "process_cpu", Time: start.Add(time.Duration(w)*time.Minute + time.Second),
			Profile: manyOneFrame(w, perWindow), Labels: map[string]string{"job": "shop"}})
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
	for i, w := range side.windows {
		if len(w) > keptFunctions || w["main.render"] < 49 {
			t.Errorf("window %d keeps %d functions, main.render %.1f%%", i+1, len(w), w["main.render"])
		}
	}
	if len(side.cum) > keptFunctions || len(side.flat) > keptFunctions || side.cum["main.render"] != side.total/2 {
		t.Errorf("the side's sums hold %d and %d functions; main.render %.0f of %.0f", len(side.cum), len(side.flat), side.cum["main.render"], side.total)
	}
	if side.merged != nil || !side.tooMany {
		t.Errorf("the windows merged are kept past %d samples", side.maxSamples)
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
	cpu := manyOneFrame(0, 100) // main.render: 1 s, half the CPU
	run := &probes.Run{Errors: map[string]int64{}, Profiles: &probes.Profiles{CPU: cpu, Windows: []*profile.Profile{cpu}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := AnalyzeRunContext(ctx, run, analyzers.DefaultRules())
	if len(a.Warnings) != 1 || a.Warnings[0].Kind != "analysis-interrupted" || a.Timeline != nil || len(a.Files) != 0 {
		t.Errorf("interrupted: warnings %+v, timeline %v, %d files", a.Warnings, a.Timeline, len(a.Files))
	}
	a = AnalyzeRunContext(analysisContext(ctx), run, analyzers.DefaultRules())
	if len(a.Warnings) != 0 || a.Timeline == nil || len(a.Files["flame.html"]) == 0 || len(a.Unexplained) == 0 {
		t.Errorf("after an interrupted load: warnings %+v, timeline %v, %d files, unexplained %+v", a.Warnings, a.Timeline, len(a.Files), a.Unexplained)
	}
}
