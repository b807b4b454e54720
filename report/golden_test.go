package report

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/fuzz"
)

// Golden files hold every report format as it is written: a change to a
// report shows as a diff of testdata/*.golden. After a change meant to
// be seen, run `go test ./report -run Golden -update` and read
// the diff before committing it.
var update = flag.Bool("update", false, "rewrite testdata/*.golden from the reports")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (rerun with -update if the change is meant):\n%s", name, path, diffLines(string(want), got))
	}
}

// diffLines shows the first lines that differ.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 8; i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + a + "\n  got:  " + c + "\n")
			shown++
		}
	}
	return b.String()
}

func table(d Document) string {
	var b strings.Builder
	d.WriteTable(&b)
	return b.String()
}

// goldenRun is a profiled run with every part a report can show.
func goldenRun() *RunReport {
	lat := make([]int64, 0, 200)
	for i := int64(1); i <= 200; i++ {
		lat = append(lat, 500*i)
	}
	run := sampleRun("sitemap", lat...)
	run.TargetProc = &probes.ProcStats{PID: 4242, CPU: 1500 * time.Millisecond, MaxRSS: 80 << 20, MaxThreads: 9, MaxFDs: 21}
	run.Decoded, run.WireBytes = 4<<20, 1<<20
	goldenPerSecond(run)
	a := Analysis{
		Findings: []analyzers.Finding{{Rule: "repeated-reply", Class: "load-time", Severity: "high", CPUShare: 0.7, CPUShareOfRequests: 0.8,
			Frames: []string{"app.(*Site).sitemap"}, Endpoint: "GET /x", OwnFrame: "app.(*Site).sitemap",
			Evidence:   "building a reply that was byte-identical every time: every one of the 200 replies of GET /x was byte-identical",
			Suggestion: "Build the reply once and serve the cache."}, {Rule: "repeated-gzip", PartOf: "repeated-reply", Class: "load-time", Severity: "high", CPUShare: 0.62, AllocShare: 0.4,
			CPUShareOfRequests: 0.7, Frames: []string{"compress/flate.(*compressor).deflate", "compress/gzip.(*Writer).Write", "app.(*Site).sitemap", "app.(*Site).ServeHTTP"},
			Endpoint: "GET /x", Evidence: "compressing: 62% of the target's CPU; each of 1 request keys got the same reply every time (200 requests)",
			Suggestion: "Compress the reply once when its content changes.", OwnFrame: "app.(*Site).sitemap"}},
		Unexplained: []analyzers.Unexplained{{Function: "app.buildItems", Path: []string{"app.(*Site).ServeHTTP", "app.feedHandler", "app.buildItems"}, CPUShare: 0.21,
			Callees: []analyzers.Callee{{Function: "encoding/csv.(*Reader).ReadAll", CPUShare: 0.18}}, LooksLike: "looks like it reads csv"}},
		Timeline: []analyzers.WindowSummary{{Window: 1, Top: []analyzers.ShareOfWork{{Work: "repeated-gzip", Share: 0.6}, {Work: "other", Share: 0.4}}}},
		Crashes:  []Crash{{Class: "hang", Input: "the sitemap load", Endpoint: "GET /x", Evidence: "3 requests got no reply within the timeout while the target's process lived"}},
		Warnings: []probes.Warning{{Kind: "profile-partial", Message: "the CPU profile covers 0.5s of the 1.5s of CPU"}},
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
	s := NewSuite("http://127.0.0.1:1", []*RunReport{goldenRun(), FromRun(sampleRun("page", 3000, 4000, 5000), Analysis{})})
	golden(t, "suite.md", s.Markdown())
	golden(t, "suite.table", table(s))
}

func TestGoldenFuzz(t *testing.T) {
	tmpl, err := fuzz.ParseTemplate("GET", "/q/link-walk?depth={int}", "")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := fuzz.ParseTemplate("POST", "/query", `{"query": "{jsonnet}"}`)
	res := &fuzz.Result{Target: "http://127.0.0.1:41000", Templates: []*fuzz.Template{tmpl, body},
		Search: 20 * time.Second, Shrinking: 12 * time.Second, Inputs: 800, Statuses: map[int]int64{200: 600, 422: 190},
		Failures: map[string]int64{"422 RUNTIME ERROR: max stack frames exceeded.": 190, "no reply: EOF": 10}, Restarts: 10, Hostile: 190,
		Crashes: []*fuzz.Crash{{Class: "stack-overflow", Evidence: "fatal error: stack overflow", Frames: []string{"github.com/google/go-jsonnet.(*interpreter).evaluate"},
			Stderr: "runtime: goroutine stack exceeds 67108864-byte limit\nfatal error: stack overflow\n",
			Input:  fuzz.Input{Template: 0, Values: []string{"4378"}}, Original: fuzz.Input{Template: 0, Values: []string{"30000000"}},
			Method: "GET", Path: "/q/link-walk?depth=4378", Endpoint: "/q/link-walk", FoundAfter: 900 * time.Millisecond, Seen: 9,
			Confirmed: true, Shrink: "shrunk from 8 to 4 bytes of values in 19 trials, until bisection and delta debugging found nothing smaller that crashes the same way",
			Also: []fuzz.Input{{Template: 1, Values: []string{"local f(n) = f(n + 1) tailstrict; f(0)"}}}}},
	}
	r := FromFuzz(res, FuzzSetting{Name: "fuzz notequery", Concurrency: 4, MemLimit: 3 << 30,
		Server: "probe fixture serve --mode per-request --notes 60 --addr 127.0.0.1:8080", ReproBase: "http://127.0.0.1:8080",
		Header: map[string]string{"Content-Type": "application/json"}})
	golden(t, "fuzz.md", r.Markdown())
	golden(t, "fuzz.table", table(r))
	files, _ := r.Files()
	golden(t, "fuzz.crasher", string(files["crashers/1-stack-overflow.txt"]))
}

func TestGoldenAB(t *testing.T) {
	ab := buildAB(sampleSides())
	ab.Order = "interleaved A B A B"
	golden(t, "ab.md", ab.Markdown())
	golden(t, "ab.html", ab.HTML())
	golden(t, "ab.table", table(ab))
}
