package analyzers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

// profileBuilder makes small profiles in code: stacks of function names,
// leaf first, with a value each.
type profileBuilder struct {
	p     *profile.Profile
	funcs map[string]*profile.Function
}

func newProfile(sampleType string) *profileBuilder {
	return &profileBuilder{p: &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"},
		{Type: sampleType, Unit: "nanoseconds"}}},
		funcs: map[string]*profile.Function{}}
}

// add records value under a stack; a name "own:pkg.F" is the target's own
// code (its file outside GOROOT), others get a GOROOT or module file.
func (b *profileBuilder) add(value int64, stack ...string) *profileBuilder {
	s := &profile.Sample{Value: []int64{1, value}}
	for _, name := range stack {
		file := "/usr/local/go/src/" + frames.PkgPath(name) + "/x.go"
		if own, ok := strings.CutPrefix(name, "own:"); ok {
			name, file = own, "/work/"+frames.PkgPath(own)+"/x.go"
		} else if strings.Contains(strings.Split(frames.PkgPath(name), "/")[0], ".") {
			file = "/root/go/pkg/mod/" + frames.PkgPath(name) + "/x.go"
		}
		f := b.funcs[name]
		if f == nil {
			f = &profile.Function{ID: uint64(len(b.funcs) + 1), Name: name, Filename: file}
			b.funcs[name] = f
			b.p.Function = append(b.p.Function, f)
		}
		loc := &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: f}}}
		b.p.Location = append(b.p.Location, loc)
		s.Location = append(s.Location, loc)
	}
	b.p.Sample = append(b.p.Sample, s)
	return b
}

const sec = int64(time.Second)

var handler = []string{"own:app/web.(*Server).handleSitemap", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve"}

func cpuWithGzip() *profile.Profile {
	return newProfile("cpu").
		add(6*sec, append([]string{"compress/flate.(*compressor).deflate", "compress/gzip.(*Writer).Write"}, handler...)...).
		add(3*sec, append([]string{"net/http.(*response).Write"}, handler...)...).
		add(1*sec, "runtime.gcBgMarkWorker").p
}

func find(fs []Finding, rule string) *Finding {
	for i := range fs {
		if fs[i].Rule == rule {
			return &fs[i]
		}
	}
	return nil
}

func TestLoadTimeNeedsInvariantReplies(t *testing.T) {
	same := Evidence{Endpoint: "GET /sitemap.xml", Replies: []Replies{{Key: "/sitemap.xml", Requests: 500, Distinct: 1}}}
	varying := Evidence{Endpoint: "GET /sitemap.xml", Replies: []Replies{{Key: "/sitemap.xml", Requests: 500, Distinct: 480}}}
	for _, tc := range []struct {
		name  string
		ev    Evidence
		class string
	}{{"invariant", same, "load-time"}, {"varying", varying, "info"}, {"no run", Evidence{}, "info"}} {
		f := find(Analyze(cpuWithGzip(), nil, tc.ev, DefaultRules()).Findings, "repeated-gzip")
		if f == nil {
			t.Fatalf("%s: no repeated-gzip", tc.name)
		}
		if f.Class != tc.class {
			t.Errorf("%s: class %s, want %s (%s)", tc.name, f.Class, tc.class, f.Evidence)
		}
		if f.CPUShare < 0.59 || f.CPUShare > 0.61 || f.CPUShareOfRequests < 0.66 || f.CPUShareOfRequests > 0.67 {
			t.Errorf("%s: shares %.2f of all, %.2f of requests; want 0.60 and 0.67", tc.name, f.CPUShare, f.CPUShareOfRequests)
		}
		if f.Frames[0] != "compress/flate.(*compressor).deflate" || !strings.Contains(strings.Join(f.Frames, " "), "handleSitemap") {
			t.Errorf("%s: frames %v", tc.name, f.Frames)
		}
		if f.Severity != "high" || f.Endpoint != tc.ev.Endpoint {
			t.Errorf("%s: %+v", tc.name, f)
		}
	}
	f := find(Analyze(cpuWithGzip(), nil, varying, DefaultRules()).Findings, "repeated-gzip")
	if !strings.Contains(f.Suggestion, "varies") || !strings.Contains(f.Evidence, "1 of 1 request keys got varying replies") {
		t.Errorf("varying: %s / %s", f.Suggestion, f.Evidence)
	}
}

func TestInvariantByNature(t *testing.T) {
	p := newProfile("cpu").add(3*sec, append([]string{"regexp.MustCompile"}, handler...)...).add(7*sec, handler...).p
	f := find(Analyze(p, nil, Evidence{}, DefaultRules()).Findings, "repeated-regexp-compile")
	if f == nil || f.Class != "load-time" {
		t.Fatalf("regexp compiled per request, no run: %+v", f)
	}
}

func TestSmallSharesAndFewSamplesAreNotFindings(t *testing.T) {
	p := newProfile("cpu").add(2*sec/100, append([]string{"compress/flate.(*compressor).deflate"}, handler...)...).add(98*sec/100,
		handler...).p
	if f := find(Analyze(p, nil, Evidence{}, DefaultRules()).Findings, "repeated-gzip"); f != nil {
		t.Errorf("2%% of CPU: %+v", f)
	}
	idle := newProfile("cpu").add(int64(100*time.Millisecond), append([]string{"compress/flate.(*compressor).deflate"}, handler...)...).p
	if f := find(Analyze(idle, nil, Evidence{}, DefaultRules()).Findings, "repeated-gzip"); f != nil {
		t.Errorf("100 ms of samples: %+v", f)
	}
}

func TestFullScanNamesTheLoop(t *testing.T) {
	page := []string{"own:app/site.pageData.Feeds", "reflect.Value.Call", "text/template.(*state).evalCall",
		"own:app/site.(*Site).handlePage", "net/http.(*conn).serve"}
	p := newProfile("cpu").
		add(4*sec, append([]string{"runtime.mapassign_faststr", "own:app/site.(*rendered).params", "own:app/site.(*snapshot).walkFeeds"},
			page...)...).
		add(2*sec, append([]string{"strconv.FormatBool", "own:app/site.(*rendered).params", "own:app/site.(*snapshot).walkFeeds"}, page...)...).
		add(1*sec, append([]string{"own:app/site.(*snapshot).walkFeeds"}, page...)...).
		add(3*sec, "html/template.(*Template).Execute", "own:app/site.(*Site).handlePage", "net/http.(*conn).serve").p
	fs := Analyze(p, nil, Evidence{Replies: []Replies{{Key: "/a", Requests: 9, Distinct: 1}}}, DefaultRules()).Findings
	f := find(fs, "per-request-full-scan")
	if f == nil {
		t.Fatalf("no full scan in %+v", fs)
	}
	if f.Frames[0] != "app/site.(*snapshot).walkFeeds" || f.CPUShare < 0.69 || f.CPUShare > 0.71 || f.Class != "load-time" {
		t.Errorf("full scan %+v", f)
	}
	// Every sample serves a request: its share of the serving CPU is the
	// same 7 s of 10 (it read 0 % when the detector did not count it).
	if f.CPUShareOfRequests < 0.69 || f.CPUShareOfRequests > 0.71 {
		t.Errorf("full scan: %.2f of the CPU serving requests, want 0.70", f.CPUShareOfRequests)
	}
	// A loop whose cost is a library's real work is that library's finding.
	lib := newProfile("cpu").add(19*sec, "compress/flate.(*compressor).deflate", "own:app/site.buildAll",
		"net/http.(*conn).serve").add(1*sec, "own:app/site.buildAll").p
	if f := find(Analyze(lib, nil, Evidence{}, DefaultRules()).Findings, "per-request-full-scan"); f != nil {
		t.Errorf("library work taken for a scan: %+v", f)
	}
}

func TestLogStormFromLines(t *testing.T) {
	p := newProfile("cpu").add(sec/100, append([]string{"log.(*Logger).output", "log.Printf"}, handler...)...).add(5*sec, handler...).p
	ev := Evidence{Replies: []Replies{{Key: "/f", Requests: 900, Distinct: 1}}, Requests: 900, LogLines: 2700, LogBytes: 270_000}
	f := find(Analyze(p, nil, ev, DefaultRules()).Findings, "log-storm")
	if f == nil || !strings.Contains(f.Evidence, "2700 lines") || !strings.Contains(f.Evidence, "3.0 a request") {
		t.Fatalf("log storm: %+v", f)
	}
	ev.LogLines = 10
	if f := find(Analyze(p, nil, ev, DefaultRules()).Findings, "log-storm"); f != nil {
		t.Errorf("10 lines for 900 requests: %+v", f)
	}
	// No CPU sample caught the logging: the lines alone are the evidence.
	quiet := newProfile("cpu").add(5*sec, handler...).p
	ev.LogLines = 2700
	if f := find(Analyze(quiet, nil, ev, DefaultRules()).Findings, "log-storm"); f == nil || !strings.Contains(f.Evidence,
		"no CPU sample caught it") || len(f.Frames) != 0 {
		t.Errorf("lines without samples: %+v", f)
	}
	ev.LogLines = 10
	if f := find(Analyze(quiet, nil, ev, DefaultRules()).Findings, "log-storm"); f != nil {
		t.Errorf("10 lines for 900 requests, no samples: %+v", f)
	}
}

func TestGCPressureNamesAllocationSites(t *testing.T) {
	cpu := newProfile("cpu").add(4*sec, "runtime.gcBgMarkWorker").add(6*sec, handler...).p
	allocs := newProfile("alloc_space").add(900, append([]string{"runtime.mallocgc", "own:app/site.(*rendered).params"}, handler...)...).
		add(100, append([]string{"runtime.mallocgc", "bytes.growSlice"}, handler...)...).p
	f := find(Analyze(cpu, allocs, Evidence{}, DefaultRules()).Findings, "gc-pressure")
	if f == nil || f.Class != "gc-pressure" || !strings.Contains(f.Evidence, "app/site.(*rendered).params (90%)") {
		t.Fatalf("gc pressure: %+v", f)
	}
}

func TestRulesFiles(t *testing.T) {
	for _, tc := range []struct{ file, src, want string }{
		{"syntax.json", "[\n  {\"id\": \"x\",\n   \"class\": load-time}\n]", "syntax.json:3:"},
		{"type.json", `[{"id": 7}]`, "must be string"},
		{"class.json", `[{"id": "x", "class": "faster", "frames": ["a"]}]`, `class "faster"`},
		{"regexp.json", `[{"id": "x", "class": "info", "frames": ["(unclosed"]}]`, `frame pattern "(unclosed"`},
		{"noframes.json", `[{"id": "x", "class": "info"}]`, "has no frames"},
		{"scope.json", `[{"id": "x", "class": "info", "scope": "all", "frames": ["a"]}]`, `scope "all"`},
		{"detector.json", `[{"id": "x", "class": "info", "detector": "magic", "frames": ["a"]}]`, `unknown detector "magic"`},
	} {
		_, err := AddRules(tc.file, []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.file, err, tc.want)
		}
	}
	rules, err := AddRules("mine.json", []byte(`[{"id": "repeated-protobuf", "class": "load-time", "what": "marshalling protobufs",
		"frames": ["^google\\.golang\\.org/protobuf/proto\\.Marshal"], "suggestion": "Marshal once."}]`))
	if err != nil {
		t.Fatal(err)
	}
	p := newProfile("cpu").add(5*sec, append([]string{"google.golang.org/protobuf/proto.Marshal"}, handler...)...).add(5*sec, handler...).p
	if f := find(Analyze(p, nil, Evidence{}, rules).Findings, "repeated-protobuf"); f == nil || f.CPUShare != 0.5 {
		t.Errorf("user rule: %+v", f)
	}
	if len(rules) != len(DefaultRules())+1 {
		t.Errorf("%d rules", len(rules))
	}
}

func TestDefaultRulesCoverDesignIDs(t *testing.T) {
	ids := map[string]bool{}
	for _, r := range DefaultRules() {
		ids[r.ID] = true
	}
	for _, id := range []string{"repeated-gzip", "repeated-json-encode", "repeated-json-decode", "repeated-xml-encode", "repeated-schema",
		"repeated-template-parse", "repeated-regexp-compile", "repeated-markdown-render", "repeated-hash", "repeated-db-query",
		"search-highlight-doc-load", "per-request-full-scan", "log-storm", "gc-pressure"} {
		if !ids[id] {
			t.Errorf("rule %s missing", id)
		}
	}
}

func TestTimeline(t *testing.T) {
	w1 := cpuWithGzip()
	w2 := newProfile("cpu").add(8*sec, "runtime.gcBgMarkWorker").add(2*sec, handler...).p
	tl := Timeline([]*profile.Profile{w1, w2}, DefaultRules())
	if len(tl) != 2 || tl[0].Top[0].Work != "repeated-gzip" || tl[1].Top[0].Work != "gc-pressure" || tl[1].Top[0].Share != 0.8 {
		t.Errorf("timeline %+v", tl)
	}
}

// The gzip of the profiles probe fetches is the cost of being measured:
// on a cheap endpoint it would otherwise read as the target's own.
func TestProfilingItselfIsNoFinding(t *testing.T) {
	pprofGzip := []string{"compress/flate.(*compressor).deflate", "compress/gzip.(*Writer).Write",
		"runtime/pprof.(*profileBuilder).build", "net/http/pprof.handler.ServeHTTP", "net/http.(*conn).serve"}
	p := newProfile("cpu").
		add(6*sec, pprofGzip...).
		add(3*sec, append([]string{"net/http.(*response).Write"}, handler...)...).p
	ev := Evidence{Endpoint: "GET /feeds/go.xml", Replies: []Replies{{Key: "/feeds/go.xml", Requests: 500, Distinct: 1}}}
	if f := find(Analyze(p, nil, ev, DefaultRules()).Findings, "repeated-gzip"); f != nil {
		t.Errorf("the profiler's own gzip became a finding: %+v", f)
	}
}

// Requests served by fasthttp or gRPC count as request handling as net/http's
// do: the share of the CPU serving requests is computed under their frames.
func TestOtherServersServeRequests(t *testing.T) {
	for name, serving := range map[string][]string{
		"fasthttp": {"own:app/api.handle", "github.com/valyala/fasthttp.(*Server).serveConn"},
		"grpc": {"own:app/api.(*svc).List", "google.golang.org/grpc.(*Server).processUnaryRPC",
			"google.golang.org/grpc.(*Server).handleStream"},
	} {
		p := newProfile("cpu").
			add(6*sec, append([]string{"compress/flate.(*compressor).deflate", "compress/gzip.(*Writer).Write"}, serving...)...).
			add(3*sec, serving...).
			add(1*sec, "runtime.gcBgMarkWorker").p
		f := find(Analyze(p, nil, Evidence{}, DefaultRules()).Findings, "repeated-gzip")
		if f == nil {
			t.Fatalf("%s: no repeated-gzip", name)
		}
		if f.CPUShareOfRequests < 0.66 || f.CPUShareOfRequests > 0.67 {
			t.Errorf("%s: share of requests %.2f, want 0.67 (6 of the 9 s serving)", name, f.CPUShareOfRequests)
		}
	}
}

// When probe controlled the data size, the growth of a microload's CPU per
// request is a full scan's evidence: linear backs the claim, constant
// argues against it.
func TestGrowthIsScanEvidence(t *testing.T) {
	scan := Finding{Rule: "per-request-full-scan", Class: "load-time", Evidence: "walking"}
	f := WithGrowth(scan, Growth{Slope: 0.98, Lo: 0.9, Hi: 1.05, Shape: "linear", Size: "the number of notes"})
	if f.Class != "load-time" || !strings.Contains(f.Evidence, "grows with the number of notes (slope 0.98, 95% interval 0.90 to 1.05)") {
		t.Errorf("linear: %+v", f)
	}
	f = WithGrowth(scan, Growth{Slope: 0.03, Lo: -0.1, Hi: 0.15, Shape: "constant", Size: "the number of notes"})
	if f.Class != "info" || !strings.Contains(f.Evidence, "does not grow") {
		t.Errorf("constant: %+v", f)
	}
	other := Finding{Rule: "repeated-gzip", Class: "load-time", Evidence: "gzip"}
	if f := WithGrowth(other, Growth{Shape: "constant"}); f.Class != "load-time" || f.Evidence != "gzip" {
		t.Errorf("another rule: %+v", f)
	}
}

// A package's rule matches its innermost leaf first: goldmark's work is
// spread over many leaves, and the experiment measures all of it under
// the outermost of the rule's frames (WorkFrame), not the heaviest leaf.
func TestWorkFrameIsTheOutermostOfTheRulesRun(t *testing.T) {
	convert := []string{"github.com/yuin/goldmark/parser.(*parser).Parse", "github.com/yuin/goldmark.(*markdown).Convert",
		"own:app.render"}
	p := newProfile("cpu")
	for i, leaf := range []string{"github.com/yuin/goldmark/ast.NewTextSegment", "github.com/yuin/goldmark/text.(*reader).Peek",
		"github.com/yuin/goldmark/util.IsSpace", "github.com/yuin/goldmark/parser.(*linkParser).Parse"} {
		p.add(int64(i+1)*sec/2, append(append([]string{leaf}, convert...), handler...)...)
	}
	p.add(3*sec, handler...)
	f := find(Analyze(p.p, nil, Evidence{}, DefaultRules()).Findings, "repeated-markdown-render")
	if f == nil {
		t.Fatal("no repeated-markdown-render")
	}
	if f.Frames[0] != "github.com/yuin/goldmark/parser.(*linkParser).Parse" || f.WorkFrame != "github.com/yuin/goldmark.(*markdown).Convert" {
		t.Errorf("frames %v, work frame %q: want the heaviest leaf first and Convert the work", f.Frames, f.WorkFrame)
	}
}
