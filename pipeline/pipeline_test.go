package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/web"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/abreport"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestMain lets the test binary stand in for a server that a Version
// starts: with PIPELINE_TEST_SERVE set it listens on loopback, prints its
// URL and answers 200 until it is stopped.
func TestMain(m *testing.M) {
	if os.Getenv("PIPELINE_TEST_SERVE") != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("listening on http://%s\n", l.Addr())
		http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeLoad is a load engine that sends nothing: each call answers with the
// next run of runs (the last again when they run out) named after ml.
type fakeLoad struct {
	mu    sync.Mutex
	runs  []result.Run
	calls []string // the microloads asked for, in order
}

func (f *fakeLoad) load(ctx context.Context, ml probes.Microload, t *probes.Target, o probes.LoadOptions) (*result.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	run := f.runs[min(len(f.calls), len(f.runs)-1)]
	f.calls = append(f.calls, ml.Name())
	run.Microload, run.Target = ml.Name(), t.URL.String()
	if o.Progress != nil {
		o.Progress(probes.Progress{Elapsed: time.Second, Requests: 10})
	}
	return &run, nil
}

// op is an operation of a run: calls answered in 1ms.
func op(name string, setup bool, calls int64) *result.OpStats {
	h := func() *hdrhistogram.Histogram {
		h := hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
		for range calls {
			h.RecordValue(1000)
		}
		return h
	}
	return &result.OpStats{Name: name, Setup: setup, Calls: calls, Latency: h(), Service: h()}
}

// nowhere is a target no server answers.
func nowhere(t *testing.T) *probes.Target {
	u, err := url.Parse("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	return &probes.Target{URL: u}
}

func measureOnce(t *testing.T, run result.Run) *report.Run {
	t.Helper()
	fl := &fakeLoad{runs: []result.Run{run}}
	rep, got, err := New(Options{Load: fl.load}).Measure(context.Background(), "x", &web.Sitemap{}, nowhere(t), probes.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Microload != "sitemap" {
		t.Fatalf("the run measured: %+v", got)
	}
	return rep
}

// A target that died under the load is a crash, classified by its exit
// status and stderr, at the run's measured operations.
func TestDeadTargetIsACrash(t *testing.T) {
	rep := measureOnce(t, result.Run{Mode: "closed", Duration: time.Second, Errors: map[string]int64{"closed": 4},
		Ops: []*result.OpStats{op("GET /sitemap.xml", false, 4), op("GET /", true, 1)},
		TargetExit: &result.Exit{Status: "exit status 2",
			Stderr: "runtime: goroutine stack exceeds 1000000000-byte limit\nfatal error: stack overflow\n\nruntime stack:\na\nb\nc\n"}})
	if len(rep.Crashes) != 1 {
		t.Fatalf("crashes %+v", rep.Crashes)
	}
	c := rep.Crashes[0]
	if c.Class != "stack-overflow" || c.Endpoint != "GET /sitemap.xml" || !strings.HasPrefix(c.Evidence, "exit status 2: ") {
		t.Errorf("crash %+v", c)
	}
	// The first five lines of stderr, no more.
	if !strings.Contains(c.Evidence, "fatal error: stack overflow") || strings.Contains(c.Evidence,
		"\nb\n") || strings.HasSuffix(c.Evidence, "c") {
		t.Errorf("evidence %q", c.Evidence)
	}
	// An exit no class fits is still a crash, named by its status.
	rep = measureOnce(t, result.Run{Errors: map[string]int64{}, TargetExit: &result.Exit{Status: "exit status 3"}})
	if len(rep.Crashes) != 1 || rep.Crashes[0].Class != "unknown" || rep.Crashes[0].Evidence != "exit status 3" {
		t.Errorf("an unclassified exit: %+v", rep.Crashes)
	}
}

// Requests that outlived the timeout while the target lived are a hang;
// a run with no timeouts and a live target has no crash.
func TestTimeoutsAloneAreAHang(t *testing.T) {
	rep := measureOnce(t, result.Run{Errors: map[string]int64{"timeout": 3}, Ops: []*result.OpStats{op("GET /search", false, 3)}})
	if len(rep.Crashes) != 1 || rep.Crashes[0].Class != "hang" || !strings.Contains(rep.Crashes[0].Evidence, "3 requests") ||
		rep.Crashes[0].Endpoint != "GET /search" {
		t.Errorf("crashes %+v", rep.Crashes)
	}
	if rep := measureOnce(t, result.Run{Errors: map[string]int64{"status": 3}}); len(rep.Crashes) != 0 {
		t.Errorf("failed checks are not a crash: %+v", rep.Crashes)
	}
}

type recordingUI struct{ labels, done int }

func (u *recordingUI) Progress(label string, p probes.Progress) {
	if label == "x" && p.Requests == 10 {
		u.labels++
	}
}
func (u *recordingUI) Done() { u.done++ }

// The UI sees the load's progress under the run's label and is told when
// it ends; the command's hook sees the engine's warnings before they go
// into the report.
func TestMeasureShowsProgressAndHandsOverWarnings(t *testing.T) {
	fl := &fakeLoad{runs: []result.Run{{Errors: map[string]int64{}, Warnings: []result.Warning{{Kind: "generator-bound", Message: "busy"}}}}}
	ui := &recordingUI{}
	p := New(Options{Load: fl.load, UI: ui, Warnings: func(ws []result.Warning) { ws[0].Message += " (hint)" }})
	rep, _, err := p.Measure(context.Background(), "x", &web.Sitemap{}, nowhere(t), probes.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ui.labels != 1 || ui.done != 1 {
		t.Errorf("the UI saw %d updates and %d ends", ui.labels, ui.done)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Message != "busy (hint)" {
		t.Errorf("warnings %+v", rep.Warnings)
	}
	// A load that fails is the caller's error, and the UI is still ended.
	failing := New(Options{UI: ui, Load: func(context.Context, probes.Microload, *probes.Target, probes.LoadOptions) (*result.Run, error) {
		return nil, errors.New("connection refused")
	}})
	if _, _, err := failing.Measure(context.Background(), "x", &web.Sitemap{}, nowhere(t),
		probes.LoadOptions{}); err == nil || ui.done != 2 {
		t.Errorf("a failing load: %v, UI ended %d times", err, ui.done)
	}
}

// selfVersion is a Version whose server is this test binary.
func selfVersion(side string) *Version {
	return &Version{Side: side, Label: side + " server", Start: func(ctx context.Context) (*target.Child, error) {
		return target.Start(ctx, target.ChildSpec{Argv: []string{os.Args[0]}, Env: []string{"PIPELINE_TEST_SERVE=1"}, Wait: 30 * time.Second})
	}}
}

// interleaveSelfVersions interleaves two selfVersions on fl's loads by
// pl, and returns what the writer was handed, by folder, as well as the
// comparison: each report is written too, since the comparison reads them.
func interleaveSelfVersions(fl *fakeLoad, pl ABPlan) (*abreport.AB, map[string]report.Document, error) {
	var mu sync.Mutex
	written := map[string]report.Document{}
	p := New(Options{Load: fl.load, Write: func(dir string, doc report.Document) error {
		mu.Lock()
		written[dir] = doc
		mu.Unlock()
		return report.WriteFolder(dir, doc)
	}})
	a, b := selfVersion("before"), selfVersion("after")
	defer a.Stop()
	defer b.Stop()
	ab, err := p.Interleave(context.Background(), a, b, pl)
	return ab, written, err
}

func plan(dir string, runs int) ABPlan {
	return ABPlan{Runs: runs, Names: []string{"sitemap"}, Dir: dir,
		Microload: func(string) probes.Microload { return &web.Sitemap{} },
		Target:    func(u *url.URL, child *target.Child) *probes.Target { return &probes.Target{URL: u, Child: child} },
		Options:   func(*url.URL, bool) probes.LoadOptions { return probes.LoadOptions{} },
	}
}

// The A/B interleave measures each side in turn through the load engine,
// hands each run's report to the writer at runs/<microload>/<side>-<n>,
// and compares what was written; a run that ended early is named, not
// counted.
func TestInterleaveWritesEveryRunAndComparesThem(t *testing.T) {
	quiet := result.Run{Mode: "closed", Duration: time.Second, Errors: map[string]int64{},
		Ops: []*result.OpStats{op("GET /sitemap.xml", false, 50)}}
	ended := quiet
	ended.Ended = "the target died"
	// Calls alternate before, after: the after side's second run ends early.
	fl := &fakeLoad{runs: []result.Run{quiet, quiet, quiet, ended}}
	dir := t.TempDir()
	ab, written, err := interleaveSelfVersions(fl, plan(dir, 2))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(fl.calls, " ") != "sitemap sitemap sitemap sitemap" {
		t.Errorf("loads %v", fl.calls)
	}
	for _, run := range []string{"before-1", "after-1", "before-2", "after-2"} {
		doc, ok := written[filepath.Join(dir, "runs", "sitemap", run)].(*report.Run)
		if !ok || doc.Microload != "sitemap" {
			t.Errorf("the writer got no report of %s: %v", run, written)
		}
	}
	if len(ab.Failures) != 1 || ab.Failures[0].Side != "after" || ab.Failures[0].Run != 2 || !strings.Contains(ab.Failures[0].Reason,
		"the target died") {
		t.Errorf("failures %+v", ab.Failures)
	}
	if len(ab.Microloads) != 1 || ab.Before != "before server" || ab.After != "after server" {
		t.Errorf("the comparison %+v", ab)
	}
}

// A version that does not start is broken for the session: it is tried
// once, named in the failures, and with nothing measured the interleave
// says why.
func TestInterleaveOfAVersionThatDoesNotStart(t *testing.T) {
	starts := 0
	broken := &Version{Side: "before", Label: "b", Start: func(ctx context.Context) (*target.Child, error) {
		starts++
		return nil, errors.New("exit status 1: address in use")
	}}
	other := &Version{Side: "after", Label: "a", Start: broken.Start}
	fl := &fakeLoad{runs: []result.Run{{}}}
	_, err := New(Options{Load: fl.load}).Interleave(context.Background(), broken, other, plan(t.TempDir(), 3))
	if err == nil || err.Error() != "nothing was measured: before does not start: exit status 1: address in use" {
		t.Errorf("error %v", err)
	}
	if starts != 2 || len(fl.calls) != 0 {
		t.Errorf("%d starts (one per version), %d loads", starts, len(fl.calls))
	}
}
