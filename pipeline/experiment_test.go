package pipeline

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	netpprof "net/http/pprof"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// settingsJSON builds a JSON document of n settings entries.
func settingsJSON(n int) []byte {
	type entry struct {
		Name  string   `json:"name"`
		Value float64  `json:"value"`
		Tags  []string `json:"tags"`
	}
	es := make([]entry, n)
	for i := range es {
		es[i] = entry{Name: fmt.Sprintf("setting-%d", i), Value: float64(i) * 1.5, Tags: []string{"a", "b", "c"}}
	}
	b, _ := json.Marshal(es)
	return b
}

// decodeSettings is the heavy work of both endpoints: the same function,
// so that only what it is fed tells them apart.
func decodeSettings(doc []byte) int {
	var v []map[string]any
	if err := json.Unmarshal(doc, &v); err != nil {
		panic(err)
	}
	return len(v)
}

func nonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// experimentServer serves /config?page=N, which decodes the same constant
// settings on every request whatever the page (its reply still changes
// with the page, and carries a nonce), and /user?name=X, the trap, which
// decodes the settings user X saved: a document of another size per user.
// /debug/pprof/ serves the process's own profiles.
func experimentServer(t *testing.T) *url.URL {
	constant := settingsJSON(800)
	saved := map[string][]byte{"ann": settingsJSON(150), "bob": settingsJSON(600), "cy": settingsJSON(1500)}
	mux := http.NewServeMux()
	mux.HandleFunc("/config", func(w http.ResponseWriter, r *http.Request) {
		n := decodeSettings(constant)
		fmt.Fprintf(w, "page %s of %d settings, nonce %s\n", r.URL.Query().Get("page"), n, nonce())
	})
	mux.HandleFunc("/user", func(w http.ResponseWriter, r *http.Request) {
		doc, ok := saved[r.URL.Query().Get("name")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "%d settings of %s, nonce %s\n", decodeSettings(doc), r.URL.Query().Get("name"), nonce())
	})
	mux.HandleFunc("/stamped", func(w http.ResponseWriter, r *http.Request) {
		// A page of its own per page number, stamped per request, and
		// compressed per request: gzip over bytes that change every time.
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, "<p>rendered %d</p>", time.Now().UnixNano())
		for i := range 400 {
			fmt.Fprintf(zw, "<li>page %s, line %d: %s</li>", r.URL.Query().Get("page"), i, settingsJSON(1))
		}
		zw.Close()
	})
	mux.HandleFunc("/gzpage", func(w http.ResponseWriter, r *http.Request) {
		// The same without the stamp: each page's reply the same every
		// time, and compressing it most of the handler's work.
		w.Header().Set("Content-Encoding", "gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
		line := []byte(fmt.Sprintf("<li>page %s: %s</li>", r.URL.Query().Get("page"), settingsJSON(1)))
		for range 2000 {
			zw.Write(line)
		}
		zw.Close()
	})
	mux.HandleFunc("/debug/pprof/", netpprof.Index)
	mux.HandleFunc("/debug/pprof/profile", netpprof.Profile)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

// experimentOf runs the main load of path with param's values, profiled,
// then the experiment on a finding of decodeSettings's work as the
// analysis would leave it (class info), and returns what it made of it.
func experimentOf(t *testing.T, u *url.URL, path, param string, values []string) (*report.Experiment, analyzers.Finding) {
	t.Helper()
	target := &probes.Target{URL: u}
	o := probes.LoadOptions{Concurrency: 4, Duration: time.Second, Warmup: 300 * time.Millisecond, Timeout: 10 * time.Second,
		Profile: &probes.ProfileOptions{PprofURL: u.JoinPath("/debug/pprof/"), Window: time.Second}}
	ml := &probes.HTTP{Path: path, Param: param, Values: values}
	ctx := context.Background()
	run, err := probes.RunLoad(ctx, ml, target, o)
	if err != nil {
		t.Fatal(err)
	}
	if run.Profiles == nil || run.Profiles.CPU == nil {
		t.Fatalf("the main run has no CPU profile: %v", run.Warnings)
	}
	f := analyzers.Finding{Rule: "repeated-json-decode", Class: "info", Frames: []string{"encoding/json.Unmarshal"},
		OwnFrame: "github.com/probehq/probe/pipeline.decodeSettings", Evidence: "decoding JSON"}
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
		t.Logf("%s %s: %d requests, %s same=%v %s", v.Name, v.Request, v.Requests, v.StableDigest, v.SameReply, v.Error)
		for _, fr := range e.Findings[0].Frames {
			t.Logf("   %s %.3f ms (%d samples), by second %.3f", fr.Frame, fr.CPUPerRequestMS[i], fr.Samples[i], fr.SlotCPUPerRequestMS[i])
		}
	}
	t.Logf("%s (seconds' noise ±%.0f%%, tolerance ±%.0f%%): %s", e.Findings[0].Verdict, 100*e.Findings[0].SlotNoise,
		100*e.Findings[0].Tolerance, e.Findings[0].Why)
	return e, a.Findings[0]
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
	u := experimentServer(t)
	e, f := experimentOf(t, u, "/config", "page", []string{"1", "2", "3"})
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
	if raceDetector && cannotTell(ef) && f.Class == "info" {
		t.Skipf("under the race detector: %s", ef.Why)
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
	u := experimentServer(t)
	e, f := experimentOf(t, u, "/user", "name", []string{"ann", "bob", "cy"})
	ef := e.Findings[0]
	if f.Class == "load-time" || ef.Verdict == "input-independent" {
		t.Fatalf("the trap was called load-time: %s", ef.Why)
	}
	if raceDetector && cannotTell(ef) && f.Class == "info" {
		t.Skipf("under the race detector: %s", ef.Why)
	}
	if ef.Verdict != "moves-with-input" || f.Class != "cacheable" {
		t.Errorf("verdict %s, class %s, want moves-with-input, cacheable: %s", ef.Verdict, f.Class, ef.Why)
	}
	if !strings.Contains(f.Suggestion, "Memoise") {
		t.Errorf("suggestion %q", f.Suggestion)
	}
}

// The verdict's rules on figures alone: a control that moved is noise, a
// work that reads the request is never load-time, no other key is no test.
func TestExperimentVerdictRules(t *testing.T) {
	vs := func(replies ...bool) []report.ExperimentVariant {
		names := []string{"same-key", "ignored-param", "other-key-1"}
		var out []report.ExperimentVariant
		for i, same := range replies {
			digest := "d0"
			if !same {
				digest = fmt.Sprintf("d%d", i)
			}
			out = append(out, report.ExperimentVariant{Name: names[i], ShouldMatter: i == 2, Requests: 100, SameReply: same,
				StableDigest: digest, ReplyDigest: digest})
		}
		return out
	}
	work := func(ms ...float64) report.ExperimentFrame {
		fr := report.ExperimentFrame{Frame: "f"}
		for _, m := range ms {
			fr.CPUPerRequestMS = append(fr.CPUPerRequestMS, m)
			fr.Samples = append(fr.Samples, 200)
		}
		return fr
	}
	for _, tc := range []struct {
		name    string
		work    report.ExperimentFrame
		vs      []report.ExperimentVariant
		reads   string
		verdict string
	}{
		{"stays put", work(1, 1.05, 0.95), vs(true, true, false), "", "input-independent"},
		{"moves", work(1, 1, 2.5), vs(true, true, false), "", "moves-with-input"},
		{"vanishes", work(1, 1, 0), vs(true, true, false), "", "moves-with-input"},
		{"noisy control", work(1, 2, 1), vs(true, true, false), "", "inconclusive"},
		// A control that moved 34% is the noise: an input that moves 7× is
		// still an input that matters; one that moves 50% is not told apart.
		{"noisy control, input far beyond it", work(5.6, 7.5, 0.78), vs(true, true, false), "", "moves-with-input"},
		{"noisy control, input within twice it", work(5.6, 7.5, 8.4), vs(true, true, false), "", "inconclusive"},
		{"reads the request", work(1, 1, 1), vs(true, true, false), "reads", "inconclusive"},
		{"no other key", work(1, 1), vs(true, true), "", "inconclusive"},
		{"same key, other reply", work(1, 1, 1), vs(false, true, false), "", "inconclusive"},
		// A parameter the server reads is an input that matters.
		{"param not ignored, moves", work(1, 3), vs(true, false), "", "moves-with-input"},
	} {
		class, verdict, _, why := verdict("info", tc.work, tc.vs, tc.reads, false, replyEvidence{})
		if verdict != tc.verdict {
			t.Errorf("%s: verdict %s (class %s), want %s: %s", tc.name, verdict, class, tc.verdict, why)
		}
		if verdict == "inconclusive" && class != "info" {
			t.Errorf("%s: an inconclusive experiment changed the class to %s", tc.name, class)
		}
	}
	// Work over the reply's bytes (compressing it): a steady cost across
	// keys whose replies differ is not one piece of work, and a request
	// whose replies differ byte for byte makes it per-request; a move
	// over stable replies is still a move.
	over := func(v []report.ExperimentVariant, fr report.ExperimentFrame) (string, string) {
		_, verdict, _, why := verdict("info", fr, v, "", true, replyEvidence{})
		return verdict, why
	}
	if v, why := over(vs(true, true, false), work(1, 1.05, 0.95)); v != "inconclusive" || !strings.Contains(why, "got other bytes") {
		t.Errorf("compressing other keys' replies at a steady cost: verdict %s, want inconclusive: %s", v, why)
	}
	if v, _ := over(vs(true, true, true), work(1, 1.05, 0.95)); v != "input-independent" {
		t.Errorf("compressing one reply for every key: verdict %s, want input-independent", v)
	}
	// Bytes that differ where the stable digest masks them (an id) are
	// other bytes all the same.
	masked := vs(true, true, true)
	masked[2].ReplyDigest = "d9"
	if v, why := over(masked, work(1, 1.05, 0.95)); v != "inconclusive" {
		t.Errorf("compressing replies that differ in a masked id: verdict %s, want inconclusive: %s", v, why)
	}
	// A parameter the server reads, the only input that ran, stamped.
	read := vs(true, false)
	read[1].DistinctReplies = 40
	if v, why := over(read, work(1, 1.05)); v != "inconclusive" {
		t.Errorf("compressing replies to a parameter the server reads, stamped: verdict %s: %s", v, why)
	}
	// An ignored-param whose reply was not kept is no input.
	unkept := vs(true, false, false)
	unkept[1].StableDigest, unkept[1].ReplyDigest = "", ""
	if _, v, _, why := verdict("info", work(1, 4, 1), unkept, "", false, replyEvidence{}); v != "input-independent" {
		t.Errorf("an ignored-param with no reply kept, 4× dearer: verdict %s, want input-independent on the other key: %s", v, why)
	}
	stamped := vs(true, true, false)
	stamped[0].DistinctReplies = 40
	if v, why := over(stamped, work(1, 1, 2.5)); v != "inconclusive" || !strings.Contains(why, "byte for byte") {
		t.Errorf("compressing replies stamped per request: verdict %s, want inconclusive: %s", v, why)
	}
	if v, why := over(vs(true, true, false), work(1, 1, 2.5)); v != "moves-with-input" {
		t.Errorf("compressing stable replies whose cost moves with the key: verdict %s: %s", v, why)
	}
	// A third cheaper is as far as a third dearer: 0.71× is a 40% change.
	if _, v, _, why := verdict("info", work(1, 1, 0.71), vs(true, true, false), "", false, replyEvidence{}); v != "moves-with-input" {
		t.Errorf("an other key at 0.71×: verdict %s, want moves-with-input: %s", v, why)
	}
	// The bound a move is said to pass is one every move passed.
	two := append(vs(true, true, false), report.ExperimentVariant{Name: "other-key-2", ShouldMatter: true, Requests: 8, StableDigest: "d3", ReplyDigest: "d3"})
	wt := work(5, 5, 6.75, 15)
	wt.Samples[3] = 24
	if _, v, tol, why := verdict("info", wt, two, "", false, replyEvidence{}); v != "moves-with-input" || tol > 0.35 || !strings.Contains(why, "beyond ±30%") {
		t.Errorf("two moves of unlike bounds: verdict %s, tolerance %.2f: %s", v, tol, why)
	}
	// A figure that is no number is never staying put.
	if _, v, _, why := verdict("info", work(1, 1, math.NaN()), vs(true, true, false), "", false, replyEvidence{}); v != "inconclusive" {
		t.Errorf("a NaN figure: verdict %s, want inconclusive: %s", v, why)
	}
	few := work(1, 1, 1)
	few.Samples[2] = 3
	fewVs := vs(true, true, false)
	fewVs[2].Requests = 2
	if _, v, _, why := verdict("info", few, fewVs, "", false, replyEvidence{}); v != "inconclusive" {
		t.Errorf("2 requests of the other key: verdict %s, want inconclusive: %s", v, why)
	}
	// One other key too thin to compare, the next one moved: the input matters.
	mixed := work(1, 1, 1, 3)
	mixedVs := append(vs(true, true, false), report.ExperimentVariant{Name: "other-key-2", ShouldMatter: true, Requests: 100})
	mixedVs[2].Requests = 2
	if _, v, _, why := verdict("info", mixed, mixedVs, "", false, replyEvidence{}); v != "moves-with-input" {
		t.Errorf("a thin other key beside one that moved: verdict %s, want moves-with-input: %s", v, why)
	}
	gone := work(1, 1, 0)
	gone.Samples[2] = 0
	if _, v, _, why := verdict("info", gone, vs(true, true, false), "", false, replyEvidence{}); v != "moves-with-input" {
		t.Errorf("the work gone from the other key: verdict %s, want moves-with-input: %s", v, why)
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

// Nonces and timestamps are masked; what the request varies is not.
func TestStableDigest(t *testing.T) {
	a := stableDigest([]byte("page 1, nonce 0f1e2d3c4b5a6978 at 2026-12-01T13:43:23Z"))
	b := stableDigest([]byte("page 1, nonce a0b1c2d3e4f50617 at 2026-12-01T13:44:01Z"))
	c := stableDigest([]byte("page 2, nonce a0b1c2d3e4f50617 at 2026-12-01T13:44:01Z"))
	if a != b || a == c {
		t.Errorf("digests %s %s %s: want the first two equal, the third apart", a, b, c)
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

// The seconds' own noise widens what counts as a move, never what counts
// as staying put. The figures of a CI run where constant work's
// other-key-2 came out 32% above the base on a busy runner: with seconds
// as unlike each other as they were there, that is noise (inconclusive,
// where a fixed 30% called it a move); with steady seconds, a move.
func TestExperimentSecondsNoise(t *testing.T) {
	type variant struct {
		name    string
		matters bool
		slots   []float64 // CPU per request of each second, ms
		reqs    []int64
		samples int
	}
	run := func(vars []variant) (string, string, float64) {
		var vs []report.ExperimentVariant
		fr := report.ExperimentFrame{Frame: "encoding/json.Unmarshal"}
		for _, v := range vars {
			ev := report.ExperimentVariant{Name: v.name, ShouldMatter: v.matters, SameReply: !v.matters, SlotRequests: v.reqs}
			var ms float64
			for k, x := range v.slots {
				ev.Requests += v.reqs[k]
				ms += x * float64(v.reqs[k])
			}
			vs = append(vs, ev)
			fr.CPUPerRequestMS = append(fr.CPUPerRequestMS, ms/float64(ev.Requests))
			fr.Samples = append(fr.Samples, v.samples)
			fr.SlotCPUPerRequestMS = append(fr.SlotCPUPerRequestMS, v.slots)
		}
		_, verdict, tol, why := verdict("info", fr, vs, "", false, replyEvidence{})
		return verdict, why, tol
	}
	scaled := func(vars []variant, f func(i int, slots []float64) []float64) []variant {
		out := slices.Clone(vars)
		for i := range out {
			out[i].slots = f(i, slices.Clone(out[i].slots))
		}
		return out
	}
	ci := []variant{
		{"same-key", false, []float64{13.5, 15.7, 17.9}, []int64{43, 44, 43}, 200},
		{"ignored-param", false, []float64{16.2, 18.9, 21.6}, []int64{33, 32, 33}, 184},
		{"other-key-1", true, []float64{16.6, 19.5, 22.4}, []int64{33, 32, 33}, 188},
		{"other-key-2", true, []float64{19.5, 25.5}, []int64{36, 36}, 161},
	}
	if v, why, _ := run(ci); v != "inconclusive" || !strings.Contains(why, "too noisy to tell") || !strings.Contains(why, "other-key-2") {
		t.Errorf("seconds ±15%% apart, other-key-2 32%% off: verdict %s, want inconclusive, too noisy: %s", v, why)
	}
	// The same means, each second at its variant's figure.
	steady := scaled(ci, func(_ int, slots []float64) []float64 {
		m := (slots[0] + slots[len(slots)-1]) / 2
		for k := range slots {
			slots[k] = m
		}
		return slots
	})
	if v, why, _ := run(steady); v != "moves-with-input" {
		t.Errorf("steady seconds: verdict %s, want moves-with-input: %s", v, why)
	}
	// Noisy seconds never let a change beyond 30% pass as staying put:
	// work a third dearer for the other keys, seconds ±12% apart.
	dearer := []variant{
		{"same-key", false, []float64{10.1, 11.5, 12.9}, []int64{40, 40, 40}, 200},
		{"ignored-param", false, []float64{10.6, 12, 13.4}, []int64{40, 40, 40}, 200},
		{"other-key-1", true, []float64{13.4, 17.1}, []int64{40, 40}, 150},
		{"other-key-2", true, []float64{13.9, 17.6}, []int64{40, 40}, 150},
	}
	if v, why, _ := run(dearer); v == "input-independent" {
		t.Errorf("work a third dearer for other keys was called input-independent: %s", why)
	}
	// Constant work on the same noisy seconds is still told constant.
	constant := scaled(dearer, func(i int, slots []float64) []float64 {
		if i >= 2 {
			for k := range slots {
				slots[k] /= 1.3
			}
		}
		return slots
	})
	if v, why, tol := run(constant); v != "input-independent" || tol != minTolerance {
		t.Errorf("constant work, seconds ±12%% apart: verdict %s within ±%.0f%%, want input-independent within ±30%%: %s", v, 100*tol, why)
	}
	// Seconds ±40% apart leave nothing to compare: too noisy, said so.
	wild := scaled(ci, func(_ int, slots []float64) []float64 {
		m := slots[0]
		return []float64{m * 0.6, m * 1.4, m}[:len(slots)]
	})
	if v, why, _ := run(wild); v != "inconclusive" || !strings.Contains(why, "too noisy to tell") {
		t.Errorf("seconds ±40%% apart: verdict %s, want inconclusive, too noisy: %s", v, why)
	}
	// On the same seconds, an input four times dearer is a move: the
	// noise the seconds showed does not hide one beyond it.
	far := slices.Clone(wild)
	far[2].slots = []float64{4 * 16.6 * 0.6, 4 * 16.6 * 1.4, 4 * 16.6}
	if v, why, _ := run(far); v != "moves-with-input" {
		t.Errorf("seconds ±40%% apart, an input 4× dearer: verdict %s, want moves-with-input: %s", v, why)
	}
	// A control that moved as far as the input is noise, however noisy
	// its seconds: the input must move twice as far.
	both := slices.Clone(far)
	both[1].slots = []float64{4 * 16.2 * 0.6, 4 * 16.2 * 1.4, 4 * 16.2}
	if v, why, _ := run(both); v == "moves-with-input" || v == "input-independent" {
		t.Errorf("a control that moved as far as the input: verdict %s, want inconclusive: %s", v, why)
	}
	// A variant whose work all but vanished has seconds of sampling noise
	// only: they do not make the others' comparison noisy.
	vanished := slices.Clone(steady)
	vanished[2] = variant{"other-key-1", true, []float64{0, 0.25, 0}, []int64{40, 40, 40}, 1}
	vanished[3].slots = []float64{22, 23}
	if v, why, _ := run(vanished); v != "moves-with-input" {
		t.Errorf("a vanished work beside a moved one: verdict %s, want moves-with-input: %s", v, why)
	}
}

// Work over the whole reply (compressing it) when the same request's
// replies differ byte for byte: the replies have settled it, and the
// experiment, whose steady cost would read as load-time, does not run.
// Over replies that do not vary, it runs, and never reads one key's
// steady cost as another's reply.
func TestExperimentLeavesWorkOverVaryingReplies(t *testing.T) {
	u := experimentServer(t)
	target := &probes.Target{URL: u}
	o := probes.LoadOptions{Concurrency: 4, Duration: time.Second, Warmup: 300 * time.Millisecond, Timeout: 10 * time.Second,
		Profile: &probes.ProfileOptions{PprofURL: u.JoinPath("/debug/pprof/"), Window: time.Second}}
	gz := analyzers.Finding{Rule: "repeated-gzip", Class: "info", Frames: []string{"compress/gzip.(*Writer).Write"},
		Evidence: "3 of 3 request keys got varying replies, so probe does not claim this work can move to load time"}
	decode := analyzers.Finding{Rule: "repeated-json-decode", Class: "info", Frames: []string{"encoding/json.Unmarshal"}, Evidence: "decoding JSON"}
	p := New(Options{Rules: analyzers.DefaultRules()}).WithExperiment(8 * time.Second)
	load := func(path string) (*probes.HTTP, *probes.Run) {
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
		t.Errorf("compressing varying replies was put to the experiment: class %s, evidence %q, %+v", a.Findings[0].Class, a.Findings[0].Evidence, a.Experiment)
	}
	// Work that feeds a part of the reply is still tested beside it.
	a = p.experiment(context.Background(), ml, target, o, run, report.Analysis{Findings: []analyzers.Finding{gz, decode}})
	if a.Experiment == nil || a.Experiment.Skipped != "" || len(a.Experiment.Findings) != 1 || a.Experiment.Findings[0].Rule != decode.Rule {
		t.Errorf("the experiment of a part's work beside it: %+v", a.Experiment)
	}
	// Pages that are the same every time: tested, with the figures, and
	// never load-time, as each page is a reply of its own.
	ml, run = load("/gzpage")
	a = p.WithExperiment(12*time.Second).experiment(context.Background(), ml, target, o, run, report.Analysis{Findings: []analyzers.Finding{gz}})
	if a.Experiment == nil || len(a.Experiment.Findings) != 1 {
		t.Fatalf("compressing replies that do not vary was not put to the experiment: %+v", a.Experiment)
	}
	ef := a.Experiment.Findings[0]
	t.Logf("%s: %s", ef.Verdict, ef.Why)
	if ef.Frames[0].Samples[0] == 0 {
		t.Errorf("the experiment saw no sample of the compression: %+v", ef.Frames)
	}
	if a.Findings[0].Class == "load-time" {
		t.Errorf("compressing each page's own reply was called load-time: %s", ef.Why)
	}
}
