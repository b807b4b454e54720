package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/internal/enginetest"
)

// ownCPUProfile is a CPU profile of samples of the target's own function
// main.recurse, depth frames deep, one sample a value.
func ownCPUProfile(depth int, values ...int64) *profile.Profile {
	fn := &profile.Function{ID: 1, Name: "main.recurse", Filename: "/work/app/main.go"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 10}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		Location: []*profile.Location{loc}, Function: []*profile.Function{fn},
		TimeNanos: time.Now().Add(-time.Minute).UnixNano(), DurationNanos: int64(10 * time.Second),
	}
	stack := make([]*profile.Location, depth)
	for i := range stack {
		stack[i] = loc
	}
	for _, v := range values {
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
	// A generous bound, not a timing: it took hours; it takes a second.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, stdout, stderr := runProbe(t, ctx, "analyze", writeProfile(t, p))
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
	code, _, stderr = runProbe(t, ctx, "analyze", "--from", "parca://"+strings.TrimPrefix(srv.URL, "http://"), "--service", "shop", "--out", out)
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
	code, stdout, stderr := runProbe(t, ctx, "analyze", path)
	if code != exitInterrupted || !strings.Contains(stdout, "warning [analysis-interrupted]") {
		t.Errorf("exit %d: %s\n%s", code, stdout, stderr)
	}
	oneLine(t, stderr, "the analysis was interrupted")
}
