package pipeline

import (
	"context"
	"net/http"
	"net/http/httptest"
	netpprof "net/http/pprof"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/internal/slowtest"
	"github.com/probehq/probe/internal/testservers/inputs"
	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// experimentServer serves internal/testservers/inputs's endpoints (work
// keyed, or not, on each input a request carries) and /debug/pprof/, the
// process's own profiles.
func experimentServer(t *testing.T) *url.URL {
	mux := http.NewServeMux()
	inputs.Routes(mux)
	mux.HandleFunc("/debug/pprof/", netpprof.Index)
	mux.HandleFunc("/debug/pprof/profile", netpprof.Profile)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

// experimentOf measures (so -short skips it) an experimentServer's main
// load of path with param's values, profiled, then the experiment on a
// finding of decodeSettings's work as the analysis would leave it (class
// info), and returns what it made of it.
func experimentOf(t *testing.T, path, param string, values []string, header ...h1.Field) (*report.Experiment, analyzers.Finding) {
	t.Helper()
	slowtest.Measures(t)
	u := experimentServer(t)
	o := probes.LoadOptions{Concurrency: 4, Duration: time.Second, Warmup: 300 * time.Millisecond, Timeout: 10 * time.Second,
		Profile: &target.ProfileOptions{PprofURL: u.JoinPath("/debug/pprof/"), Window: time.Second}}
	target := &probes.Target{URL: u}
	ml := &probes.HTTP{Path: path, Param: param, Values: values, Header: header}
	ctx := context.Background()
	run, err := probes.RunLoad(ctx, ml, target, o)
	if err != nil {
		t.Fatal(err)
	}
	if run.Profiles == nil || run.Profiles.CPU == nil {
		t.Fatalf("the main run has no CPU profile: %v", run.Warnings)
	}
	f := analyzers.Finding{Rule: "repeated-json-decode", Class: "info", Frames: []string{"encoding/json.Unmarshal"},
		OwnFrame: "github.com/probehq/probe/internal/testservers/inputs.DecodeSettings", Evidence: "decoding JSON"}
	p := New(Options{}).WithExperiment(14 * time.Second)
	var a report.Analysis
	// A machine busy enough to leave the server a tenth of a core gives
	// too few samples to compare, or seconds too unlike each other (the
	// verdict says so): one more try. A verdict that claims is never
	// tried again.
	for try := 0; try < 2; try++ {
		a = p.experiment(ctx, ml, target, o, run, report.Analysis{Findings: []analyzers.Finding{f}})
		if a.Experiment == nil {
			t.Fatal("no experiment ran")
		}
		if len(a.Experiment.Findings) == 0 || !cannotTell(a.Experiment.Findings[0]) {
			break
		}
		t.Logf("the experiment could not tell, once more: %s", a.Experiment.Findings[0].Why)
	}
	e := a.Experiment
	for i, v := range e.Variants {
		t.Logf("%s %s: %d requests, %s same=%v %s; others %.2f cores, %d busy seconds left out", v.Name, v.Request, v.Requests,
			v.StableDigest, v.SameReply, v.Error, v.SlotOthersCores, v.BusySecondsLeftOut)
		for _, fr := range e.Findings[0].Frames {
			t.Logf("   %s %.3f ms (%d samples), by second %.3f", fr.Frame, fr.CPUPerRequestMS[i], fr.Samples[i], fr.SlotCPUPerRequestMS[i])
		}
	}
	t.Logf("%s (seconds' noise ±%.0f%%, tolerance ±%.0f%%): %s", e.Findings[0].Verdict, 100*e.Findings[0].SlotNoise,
		100*e.Findings[0].Tolerance, e.Findings[0].Why)
	return e, a.Findings[0]
}

// trapExperimentOf is experimentOf on a trap, work that depends on an
// input: a load-time claim on it fails the test whatever the machine.
func trapExperimentOf(t *testing.T, trap, path, param string, values []string,
	header ...h1.Field) (*report.Experiment, report.ExperimentFinding, analyzers.Finding) {
	t.Helper()
	e, f := experimentOf(t, path, param, values, header...)
	ef := e.Findings[0]
	if f.Class == "load-time" || ef.Verdict == "input-independent" {
		t.Fatalf("%s: called load-time: %s", trap, ef.Why)
	}
	return e, ef, f
}

// couldNotTell: the experiment said the machine let it compare nothing
// (too few samples, seconds too unlike each other: the race detector, or
// go test ./... running two packages on two cores) and claimed nothing,
// the class as it was. The test's verdict is then not asserted; what it
// asserted before (never load-time for a trap) holds all the same.
func couldNotTell(t *testing.T, ef report.ExperimentFinding, f analyzers.Finding) bool {
	t.Helper()
	if !cannotTell(ef) || f.Class != ef.ClassBefore {
		return false
	}
	t.Logf("the experiment could not tell on this machine, and claimed nothing: %s", ef.Why)
	return true
}

// cannotTell: the experiment said it could not compare, and why: too few
// samples of the work, or seconds of one variant too unlike each other.
func cannotTell(ef report.ExperimentFinding) bool {
	return ef.Verdict == "inconclusive" && (strings.Contains(ef.Why, "too few samples") || strings.Contains(ef.Why, "too noisy to tell"))
}

// Work that ignores the input: the page changes the reply, not the work.
// The experiment must find the same CPU per request for every page, and
// call it load-time with the figures.
func TestExperimentFindsInputIndependentWork(t *testing.T) {
	e, f := experimentOf(t, "/config", "page", []string{"1", "2", "3"})
	if e.Skipped != "" {
		t.Fatalf("skipped: %s", e.Skipped)
	}
	names := []string{}
	for _, v := range e.Variants {
		if v.Error != "" {
			t.Errorf("variant %s: %s", v.Name, v.Error)
		}
		names = append(names, v.Name)
	}
	if got := strings.Join(names, ","); got != "same-key,ignored-param,other-key-1,other-key-2" {
		t.Errorf("variants %s", got)
	}
	if !e.Variants[0].SameReply || !e.Variants[1].SameReply {
		t.Errorf("the same key and the ignored parameter must get the same reply (nonce masked): %+v", e.Variants[:2])
	}
	if e.Variants[2].SameReply {
		t.Errorf("another page got the same reply: %+v", e.Variants[2])
	}
	if !strings.Contains(e.Variants[1].Request, IgnoredParam+"=1") {
		t.Errorf("ignored-param sent %q", e.Variants[1].Request)
	}
	ef := e.Findings[0]
	if couldNotTell(t, ef, f) {
		return
	}
	if ef.Verdict != "input-independent" || f.Class != "load-time" {
		t.Fatalf("verdict %s, class %s, want input-independent, load-time: %s", ef.Verdict, f.Class, ef.Why)
	}
	if !strings.Contains(f.Evidence, "stayed within") || !strings.Contains(f.Evidence, "other-key-1") {
		t.Errorf("the evidence does not give the experiment's figures: %s", f.Evidence)
	}
}

// The trap: the same function's work depends on the query value (each
// user's saved settings). The experiment must see it move and say
// cacheable, never load-time.
func TestExperimentTrapWorkMovesWithInput(t *testing.T) {
	_, ef, f := trapExperimentOf(t, "the trap", "/user", "name", []string{"ann", "bob", "cy"})
	if couldNotTell(t, ef, f) {
		return
	}
	if ef.Verdict != "moves-with-input" || f.Class != "cacheable" {
		t.Errorf("verdict %s, class %s, want moves-with-input, cacheable: %s", ef.Verdict, f.Class, ef.Why)
	}
	if !strings.Contains(f.Suggestion, "Memoise") {
		t.Errorf("suggestion %q", f.Suggestion)
	}
}

// The ignored parameter goes after the query the request has, or starts one.
func TestWithIgnoredParam(t *testing.T) {
	for path, want := range map[string]string{"/a": "/a?probe-experiment=1", "/a?x=1": "/a?x=1&probe-experiment=1"} {
		if got := withIgnoredParam(h1.NewRequest("GET", path, nil)).Path; got != want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
}

// The catalog's decoders may be decoding the request: with bodies, the
// experiment cannot tell that from decoding constant data.
func TestRuleOfKnowsTheDecoders(t *testing.T) {
	rules := analyzers.DefaultRules()
	if r := ruleOf(rules, "repeated-json-decode"); r == nil || !r.Input {
		t.Errorf("repeated-json-decode: %+v, want a rule that may decode the input", r)
	}
	if r := ruleOf(rules, "repeated-gzip"); r == nil || r.Input {
		t.Errorf("repeated-gzip: %+v", r)
	}
	if ruleOf(rules, "no-such-rule") != nil {
		t.Error("a rule for an unknown id")
	}
}

// Work over the whole reply (compressing it) when the same request's
// replies differ byte for byte: the replies have settled it, and the
// experiment, whose steady cost would read as load-time, does not run.
// Over replies that do not vary, it runs, and never reads one key's
// steady cost as another's reply.
func TestExperimentLeavesWorkOverVaryingReplies(t *testing.T) {
	slowtest.Measures(t)
	u := experimentServer(t)
	o := probes.LoadOptions{Concurrency: 4, Duration: time.Second, Warmup: 300 * time.Millisecond, Timeout: 10 * time.Second,
		Profile: &target.ProfileOptions{PprofURL: u.JoinPath("/debug/pprof/"), Window: time.Second}}
	target := &probes.Target{URL: u}
	gz := analyzers.Finding{Rule: "repeated-gzip", Class: "info", Frames: []string{"compress/gzip.(*Writer).Write"},
		Evidence: "3 of 3 request keys got varying replies, so probe does not claim this work can move to load time"}
	decode := analyzers.Finding{Rule: "repeated-json-decode", Class: "info", Frames: []string{"encoding/json.Unmarshal"},
		Evidence: "decoding JSON"}
	p := New(Options{Rules: analyzers.DefaultRules()}).WithExperiment(8 * time.Second)
	load := func(path string) (*probes.HTTP, *result.Run) {
		ml := &probes.HTTP{Path: path, Param: "page", Values: []string{"1", "2", "3"}}
		run, err := probes.RunLoad(context.Background(), ml, target, o)
		if err != nil {
			t.Fatal(err)
		}
		return ml, run
	}
	ml, run := load("/stamped")
	distinct := 0
	for _, d := range run.Digests {
		distinct = max(distinct, d.Distinct)
	}
	if distinct < 2 {
		t.Fatalf("the stamped pages' replies did not differ: %+v", run.Digests)
	}
	a := p.experiment(context.Background(), ml, target, o, run, report.Analysis{Findings: []analyzers.Finding{gz}})
	if a.Experiment != nil || a.Findings[0].Class != "info" || !strings.Contains(a.Findings[0].Evidence, "was not run on it") {
		t.Errorf("compressing varying replies was put to the experiment: class %s, evidence %q, %+v", a.Findings[0].Class,
			a.Findings[0].Evidence, a.Experiment)
	}
	// Work that feeds a part of the reply is still tested beside it.
	a = p.experiment(context.Background(), ml, target, o, run, report.Analysis{Findings: []analyzers.Finding{gz, decode}})
	if a.Experiment == nil || a.Experiment.Skipped != "" || len(a.Experiment.Findings) != 1 || a.Experiment.Findings[0].Rule != decode.Rule {
		t.Errorf("the experiment of a part's work beside it: %+v", a.Experiment)
	}
	// Pages that are the same every time: tested, with the figures, and
	// never load-time, as each page is a reply of its own.
	ml, run = load("/gzpage")
	a = p.WithExperiment(12*time.Second).experiment(context.Background(), ml, target, o, run,
		report.Analysis{Findings: []analyzers.Finding{gz}})
	if a.Experiment == nil || len(a.Experiment.Findings) != 1 {
		t.Fatalf("compressing replies that do not vary was not put to the experiment: %+v", a.Experiment)
	}
	ef := a.Experiment.Findings[0]
	t.Logf("%s: %s", ef.Verdict, ef.Why)
	if ef.Frames[0].Samples[0] == 0 && !cannotTell(ef) { // a starved server's profile holds none, and says so
		t.Errorf("the experiment saw no sample of the compression: %+v", ef.Frames)
	}
	if a.Findings[0].Class == "load-time" {
		t.Errorf("compressing each page's own reply was called load-time: %s", ef.Why)
	}
}
