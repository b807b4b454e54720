package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/report"
)

func TestLoadBadInput(t *testing.T) {
	dead, _ := shared.FreeLoopbackAddr()
	closed := "http://" + dead
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"searh"}, exitUsage, `unknown command "searh"`},
		{[]string{"http"}, exitUsage, "--path is required"},
		{[]string{"http", "--path", "/a b"}, exitUsage, "holds a space"},
		{[]string{"http", "--path", "/x", "--target", "http://127.0.0.1:1"}, exitError, "is unreachable"},
		{[]string{"http", "--path", "/x", "--param", "novalues"}, exitUsage, "want name=v1,v2"},
		{[]string{"http", "--path", "/x", "--header", "no colon"}, exitUsage, "want Name:value"},
		{[]string{"http", "--path", "x"}, exitUsage, "must start with /"},
		{[]string{"sitemap", "--target", "not a url"}, exitUsage, "is not a URL"},
		{[]string{"sitemap", "--target", "https://127.0.0.1:1"}, exitUsage, "an https:// target is loaded over HTTP/2 only: add --http2"},
		{[]string{"sitemap", "--target", "ftp://127.0.0.1:1"}, exitUsage, "only http://"},
		{[]string{"sitemap", "--concurrency", "0"}, exitUsage, "--concurrency 0: want 1 to"},
		{[]string{"sitemap", "--rate", "NaN"}, exitUsage, "--rate NaN: want 0 (closed loop) or"},
		{[]string{"sitemap", "--rate", "Inf"}, exitUsage, "--rate +Inf"},
		{[]string{"sitemap", "--rate", "1e-300"}, exitUsage, "--rate 1e-300"},
		{[]string{"sitemap", "--duration", "100000h"}, exitUsage, "at most 24h"},
		{[]string{"sitemap", "--max-body", "10"}, exitUsage, "--max-body 10 B: want at least 1 KiB"},
		{[]string{"sitemap", "--max-body", "lots"}, exitUsage, "is not a size like 64MiB"},
		{[]string{"sitemap", "--duration", "soon"}, exitUsage, "invalid value"},
		{[]string{"sitemap", "--fixture-mode", "lazy"}, exitUsage, "--fixture-mode"},
		{[]string{"sitemap", "--target", closed, "--duration", "1s"}, exitError, "connection refused"},
	} {
		probeCmd.BadInput(t, tc.args, tc.code, tc.want)
	}
	code, _, stderr := probeCmd.Run(t, context.Background(), "analyze", "--max-profile", "5", "x.pb.gz")
	if code != exitUsage {
		t.Errorf("analyze --max-profile 5: exit %d", code)
	}
	clitest.OneLine(t, stderr, "--max-profile 5 B: want at least 1 KiB")
}

func TestHTTPJSONKeepsStdoutClean(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "item %s", r.URL.Query().Get("id"))
	}))
	defer srv.Close()
	out := t.TempDir()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "http", "--target", srv.URL, "--path", "/items?x=1",
		"--param", "id=1,2,3", "--header", "X-Probe: yes", "--duration", "500ms", "--warmup", "100ms", "--concurrency", "2", "--json",
		"--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep report.Run
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not report.json alone: %v\n%s", err, stdout)
	}
	if rep.Microload != "http" || rep.Latency.Requests < 10 || rep.Latency.Errors != 0 || len(rep.ReplyDigests) != 3 || rep.Connections.Opened != 2 {
		t.Errorf("report: %+v", rep)
	}
	if !strings.Contains(stderr, "GET /items") {
		t.Errorf("the table should go to stderr with --json: %q", stderr)
	}
	for _, f := range []string{"report.json", "report.md", "latency.hgrm"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestFailedChecksExitNonZero(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	code, _, stderr := probeCmd.Run(t, context.Background(), "http", "--target", srv.URL, "--path", "/", "--duration", "300ms", "--warmup",
		"0s", "--out", t.TempDir())
	if code != exitError {
		t.Errorf("exit %d", code)
	}
	clitest.OneLine(t, stderr, "failed their checks")
}

func TestCtrlCWritesWhatWasMeasured(t *testing.T) {
	// Ctrl-C half a second after the first request, past the 200 ms
	// warm-up however long the start took on a busy machine.
	ctx, cancel := context.WithCancel(context.Background())
	var first sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first.Do(func() { time.AfterFunc(500*time.Millisecond, cancel) })
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	out := t.TempDir()
	code, _, stderr := probeCmd.Run(t, ctx, "http", "--target", srv.URL, "--path", "/", "--duration", "1m", "--warmup", "200ms", "--out", out)
	if code != exitInterrupted {
		t.Errorf("exit %d: %s", code, stderr)
	}
	clitest.OneLine(t, stderr, "interrupted: what was measured is in")
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Run
	json.Unmarshal(b, &rep)
	if rep.Ended != "interrupted" || rep.Latency.Requests == 0 {
		t.Errorf("report after Ctrl-C: %s", b)
	}
}

func TestAnalyzeBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pb.gz")
	os.WriteFile(empty, nil, 0o644)
	corrupt := filepath.Join(dir, "corrupt.pb.gz")
	os.WriteFile(corrupt, []byte("\x1f\x8bnot really gzip"), 0o644)
	rules := filepath.Join(dir, "rules.json")
	os.WriteFile(rules, []byte("[\n {\"id\": \"x\", \"class\": }\n]"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"analyze"}, exitUsage, "usage: probe analyze"},
		{[]string{"analyze", filepath.Join(dir, "missing.pb.gz")}, exitError, "no such file"},
		{[]string{"analyze", empty}, exitError, "not a pprof profile"},
		{[]string{"analyze", corrupt}, exitError, "not a pprof profile"},
		{[]string{"analyze", "--rules", rules, corrupt}, exitUsage, "rules.json:2:"},
		{[]string{"sitemap", "--rules", rules}, exitUsage, "rules.json:2:"},
		{[]string{"sitemap", "--profile", "--pprof", "::"}, exitUsage, "--pprof"},
	} {
		code, _, stderr := probeCmd.Run(t, context.Background(), tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, stderr)
		}
		clitest.OneLine(t, stderr, tc.want)
	}
}

func TestFlameCommand(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pb.gz")
	// A real CPU profile of this test process.
	f, _ := os.Create(prof)
	pprof.StartCPUProfile(f)
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		_ = fmt.Sprint(time.Now())
	}
	pprof.StopCPUProfile()
	f.Close()
	corrupt := filepath.Join(dir, "corrupt.pb.gz")
	os.WriteFile(corrupt, []byte("garbage"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"flame", prof}, exitUsage, "usage: probe flame"},
		{[]string{"flame", prof, "-o", filepath.Join(dir, "x.png")}, exitUsage, "want a .html or .svg"},
		{[]string{"flame", corrupt, "-o", filepath.Join(dir, "x.html")}, exitError, "not a pprof profile"},
		{[]string{"flame", prof, "--sample-index", "alloc_space", "-o", filepath.Join(dir, "x.html")}, exitError, "valid: samples, cpu"},
		{[]string{"flame", prof, "--focus", "(", "-o", filepath.Join(dir, "x.html")}, exitUsage, "--focus"},
	} {
		code, _, stderr := probeCmd.Run(t, context.Background(), tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, stderr)
		}
		clitest.OneLine(t, stderr, tc.want)
	}
	for _, out := range []string{"flame.html", "flame.svg", "diff.html"} {
		args := []string{"flame", prof, "-o", filepath.Join(dir, out)}
		if out == "diff.html" {
			args = append(args, "--base", prof)
		}
		if code, _, stderr := probeCmd.Run(t, context.Background(), args...); code != exitOK {
			t.Errorf("%s: exit %d: %s", out, code, stderr)
		}
		if st, err := os.Stat(filepath.Join(dir, out)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", out, err)
		}
	}
}
