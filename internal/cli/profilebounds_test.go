package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/enginetest"
)

// ownCPUProfile is a CPU profile of samples of the target's own
// functions, depth frames deep, one sample a value: the first of
// main.recurse, the next of main.other1, main.other2, ….
func ownCPUProfile(depth int, values ...int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		TimeNanos: time.Now().Add(-time.Minute).UnixNano(), DurationNanos: int64(10 * time.Second),
	}
	for i, v := range values {
		name := "main.recurse"
		if i > 0 {
			name = "main.other" + strconv.Itoa(i)
		}
		fn := &profile.Function{ID: uint64(i + 1), Name: name, Filename: "/work/app/main.go"}
		loc := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn, Line: 10}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, loc)
		stack := make([]*profile.Location, depth)
		for j := range stack {
			stack[j] = loc
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: stack, Value: []int64{v / 10_000_000, v}})
	}
	return p
}

func writeProfile(t *testing.T, p *profile.Profile) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cpu.pb.gz")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// probe analyze on a file, and analyze --from on a profiler serving it:
// a CPU profile of one sample a million frames of the target's own
// function is analysed at once, its unexplained path cut to 32 frames at
// each end with the middle said. It did not end before (a quadratic
// join over the frames), and ignored SIGTERM.
func TestAnalyzeDeepStack(t *testing.T) {
	p := ownCPUProfile(1_000_000, 3_000_000_000)
	// A bound on a hang, not a timing: it took hours; it takes two
	// seconds alone and took 23 beside the rest of go test ./... on CI.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, stdout, stderr := probeCmd.Run(t, ctx, "analyze", writeProfile(t, p))
	if code != exitOK || ctx.Err() != nil {
		t.Fatalf("analyze: exit %d, %v: %s", code, ctx.Err(), stderr)
	}
	if !strings.Contains(stdout, "(999,996 outer frames) → main.recurse") || len(stdout) > 4000 {
		t.Errorf("analyze: %d bytes: %.2000s", len(stdout), stdout)
	}
	st := &enginetest.Store{}
	st.Add(enginetest.Entry{Name: "process_cpu", Time: time.Now().Add(-time.Minute), Profile: p, Labels: map[string]string{"job": "shop"}})
	srv := httptest.NewServer(st.Parca())
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr = probeCmd.Run(t, ctx, "analyze", "--from", "parca://"+strings.TrimPrefix(srv.URL, "http://"), "--service", "shop",
		"--out", out)
	if code != exitOK || ctx.Err() != nil {
		t.Fatalf("analyze --from: exit %d, %v: %s", code, ctx.Err(), stderr)
	}
	var rep struct {
		Unexplained []struct {
			Path   []string `json:"path"`
			Elided int      `json:"elided_frames"`
		} `json:"unexplained"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Unexplained) != 1 {
		t.Fatalf("report.json: %v %.500s", err, b)
	}
	if u := rep.Unexplained[0]; len(u.Path) != 65 || u.Path[32] != "… 999,936 frames …" || u.Elided != 999_936 {
		t.Errorf("path of %d entries, middle %q, elided %d", len(u.Path), u.Path[min(32, len(u.Path)-1)], u.Elided)
	}
}

// Ctrl-C or SIGTERM during probe analyze prints what was found by then
// and exits 130.
func TestAnalyzeInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	path := writeProfile(t, ownCPUProfile(10, 3_000_000_000))
	code, stdout, stderr := probeCmd.Run(t, ctx, "analyze", path)
	if code != exitInterrupted || !strings.Contains(stdout, "warning [analysis-interrupted]") {
		t.Errorf("exit %d: %s\n%s", code, stdout, stderr)
	}
	clitest.OneLine(t, stderr, "the analysis was interrupted")
}

// hostilePprof is a target whose /debug/pprof/ serves cpu as its CPU
// profile (any seconds) and nothing else: the heap and goroutine
// profiles are 404 (a warning each).
func hostilePprof(t *testing.T, cpu *profile.Profile) *httptest.Server {
	var b bytes.Buffer
	if err := cpu.Write(&b); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/pprof/":
			w.Write([]byte("<html>profile goroutine heap</html>"))
		case "/debug/pprof/profile":
			secs, _ := strconv.Atoi(r.URL.Query().Get("seconds"))
			select {
			case <-time.After(time.Duration(secs) * time.Second):
			case <-r.Context().Done():
			}
			w.Write(b.Bytes())
		case "/":
			w.Write([]byte("ok"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A live run whose target's CPU profile holds a negative value (pprof's
// values are signed): the sample is dropped with a profile-invalid
// warning, and the report is written with the latencies measured. It was
// "probe bug, the report is not written" (a negative CPU share).
func TestLiveRunNegativeCPUValue(t *testing.T) {
	srv := hostilePprof(t, ownCPUProfile(3, 3_000_000_000, -1_000_000_000))
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "http", "--target", srv.URL, "--path", "/", "--profile",
		"--duration", "2s", "--warmup", "0s", "--concurrency", "2", "--json", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Warnings []struct{ Kind, Message string } `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || w.Kind == "profile-invalid" && strings.Contains(w.Message, "dropped 1 sample of negative samples and cpu values")
	}
	if !found {
		t.Errorf("no profile-invalid warning: %+v", rep.Warnings)
	}
}

// probe analyze on a file, and analyze --from on a profiler serving it: a
// negative CPU value is dropped with a profile-invalid warning, and the
// report is written (analyze --from refused it as a probe bug: a CPU
// share of 150 %).
func TestAnalyzeNegativeCPUValue(t *testing.T) {
	p := ownCPUProfile(3, 3_000_000_000, -1_000_000_000)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "analyze", writeProfile(t, p))
	if code != exitOK || !strings.Contains(stdout, "warning [profile-invalid]") ||
		!strings.Contains(stdout, "dropped 1 sample of negative samples and cpu values") || !strings.Contains(stdout,
		"100% of the target's CPU under") {
		t.Errorf("analyze: exit %d: %s%s", code, stdout, stderr)
	}
	st := &enginetest.Store{}
	st.Add(enginetest.Entry{Name: "process_cpu", Time: time.Now().Add(-time.Minute), Profile: p, Labels: map[string]string{"job": "shop"}})
	srv := httptest.NewServer(st.Parca())
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr = probeCmd.Run(t, context.Background(), "analyze", "--from", "parca://"+strings.TrimPrefix(srv.URL, "http://"),
		"--service", "shop", "--json", "--out", out)
	if code != exitOK {
		t.Fatalf("analyze --from: exit %d: %s", code, stderr)
	}
	var rep struct {
		Warnings    []struct{ Kind, Message string } `json:"warnings"`
		Unexplained []struct {
			Share float64 `json:"cpu_share"`
		} `json:"unexplained"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Warnings) != 1 || rep.Warnings[0].Kind != "profile-invalid" ||
		len(rep.Unexplained) != 1 || rep.Unexplained[0].Share != 1 {
		t.Errorf("report.json: %v %s", err, stdout)
	}
}

// compare --from against a profiler whose windows each hold more samples
// than --max-profile allows (one per 32 bytes), small as they are in
// bytes (one-frame samples of ~10 bytes): one line naming the bound,
// exit 1, before any window is parsed whole.
func TestCompareFromTooManySamples(t *testing.T) {
	st := &enginetest.Store{}
	now := time.Now()
	for i := range 4 {
		p := ownCPUProfile(1, 10_000_000)
		for range 3000 { // distinct by a number, so that the profiler's merge keeps them
			p.Sample = append(p.Sample, &profile.Sample{Location: p.Sample[0].Location, Value: []int64{1, 10_000_000},
				NumLabel: map[string][]int64{"n": {int64(len(p.Sample))}}})
		}
		st.Add(enginetest.Entry{Name: "process_cpu", Time: now.Add(-time.Duration(4-i) * time.Minute), Profile: p,
			Labels: map[string]string{"job": "shop", "v": strconv.Itoa(i % 2)}})
	}
	srv := httptest.NewServer(st.Parca())
	defer srv.Close()
	code, _, stderr := probeCmd.Run(t, context.Background(), "compare", "--from", "parca://"+strings.TrimPrefix(srv.URL, "http://"),
		"--service", "shop", "--before", `{v="0"}`, "--after", `{v="1"}`, "--since", "10m", "--windows", "2",
		"--max-profile", "64KiB", "--out", filepath.Join(t.TempDir(), "out"))
	if code != exitError {
		t.Errorf("exit %d: %s", code, stderr)
	}
	clitest.OneLine(t, stderr, "profile holds over 2,048 samples (one per 32 bytes of --max-profile 64 KiB: raise it)")
}

// A profile names its functions and files as the server that wrote it
// chose: names with escapes, a carriage return and a line posing as
// probe's verdict, and a name of a megabyte, reach probe analyze's output
// as printable text of bounded length.
func TestAnalyzeHostileFunctionNames(t *testing.T) {
	p := ownCPUProfile(3, 3_000_000_000, 2_000_000_000)
	p.Function[0].Name = "main." + evil
	p.Function[0].Filename = "/app/" + evil + ".go"
	p.Function[1].Name = "main." + strings.Repeat("x", 1<<20)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "analyze", writeProfile(t, p))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "main.") || !strings.Contains(stdout, "xxx…") {
		t.Fatalf("the functions are not named, or the long one not cut:\n%.2000s", stdout)
	}
	printable(t, stdout, 200, 1200)
	printable(t, stderr, 5, 300)
}
