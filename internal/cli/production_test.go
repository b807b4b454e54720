package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/internal/enginetest"
)

// The flags of a production read: bad input is one line and exit 2
// before any call; an engine that fails is one line and exit 1, and the
// report folder is not claimed.
func TestProductionFlagsBadInput(t *testing.T) {
	dead, _ := shared.FreeLoopbackAddr()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"analyze", "--from", "pyroscope://" + dead}, exitUsage, "--service is required"},
		{[]string{"analyze", "--from", "grafana://" + dead, "--service", "a"}, exitUsage, `unknown engine "grafana"`},
		{[]string{"analyze", "--from", "pyroscope://" + dead, "--service", "a", "x.pb.gz"}, exitUsage, "name no profile file"},
		{[]string{"analyze", "--from", "pyroscope://" + dead, "--service", "a", "--type", "heap"}, exitUsage, `unknown profile type "heap"`},
		{[]string{"analyze", "--from", "pyroscope://" + dead, "--service", "a", "--start", "yesterday"}, exitUsage,
			"--start \"yesterday\": want RFC 3339"},
		{[]string{"analyze", "--from", "pyroscope://" + dead, "--service", "a", "--start", "1h", "--end", "2h"}, exitUsage, "empty time range"},
		{[]string{"analyze", "--from", "pyroscope://" + dead, "--service", "a", "--since", "0s"}, exitUsage, "--since 0s"},
		{[]string{"analyze", "--from", "pyroscope://" + dead, "--service", "a", "--header", ": v"}, exitUsage, "want Name:value"},
		{[]string{"analyze", "--from", "pyroscope://" + dead, "--service", "a"}, exitError, "cannot be reached"},
		{[]string{"compare", "--from", "parca://" + dead, "--service", "a", "--before", "{v=\"1\"}", "--after", "{v=\"2\"}", "--windows",
			"1"}, exitUsage, "--windows 1"},
		{[]string{"compare", "--from", "parca://" + dead, "--service", "a", "--before-range", "2h"}, exitUsage, "want START/END"},
		{[]string{"compare", "--from", "parca://" + dead, "--service", "a", "--before-range", "1h/2h", "--after-range", "1h/0s"},
			exitUsage, "empty time range"},
		{[]string{"compare", "--from", "parca://" + dead, "--service", "a", "--type", "alloc", "--before", "{v=\"1\"}"}, exitUsage, "--type cpu"},
		{[]string{"compare", "--from", "parca://" + dead, "--service", "a", "--before", "{v=\"1\"}"}, exitError, "cannot be reached"},
		{[]string{"compare", "--from", "parca://" + dead, "--service", "a", "--before", "{v=\"1\"}", "x", "y"}, exitUsage, "name no folder"},
		{[]string{"analyze", "--out", "d", "x.pb.gz"}, exitUsage, "--out is for --from"},
		{[]string{"sitemap", "--production", "pyroscope://" + dead}, exitUsage, "flag provided but not defined"},
		{[]string{"all", "--service", "a"}, exitUsage, "give --production"},
		{[]string{"all", "--profile", "--production", "pyroscope://" + dead, "--service", "a", "--production-type", "alloc"}, exitUsage,
			"--production-type cpu"},
		{[]string{"all", "--profile", "--production", "pyroscope://" + dead, "--service", "a"}, exitError, "cannot be reached"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := probeCmd.Run(t, context.Background(), append(tc.args, "--out", out)...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr)
		}
		clitest.OneLine(t, stderr, tc.want)
		if stdout != "" {
			t.Errorf("%v: stdout %q", tc.args, stdout)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: a failed read claimed the folder", tc.args)
		}
	}
}

// analyze --from sends the header and tenant flags, and a multi-tenant
// Pyroscope without its tenant is one line.
func TestAnalyzeFromSendsHeaders(t *testing.T) {
	var b bytes.Buffer
	if err := pprof.StartCPUProfile(&b); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	pprof.StopCPUProfile()
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	st := &enginetest.Store{Tenant: "team-a"}
	st.Add(enginetest.Entry{Name: "process_cpu", Time: time.Now().Add(-time.Minute), Profile: p,
		Labels: map[string]string{"service_name": "shop"}})
	srv := httptest.NewServer(st.Pyroscope())
	defer srv.Close()
	from := "pyroscope://" + strings.TrimPrefix(srv.URL, "http://")
	code, _, stderr := probeCmd.Run(t, context.Background(), "analyze", "--from", from, "--service", "shop", "--out", t.TempDir())
	if code != exitError {
		t.Errorf("no tenant: exit %d", code)
	}
	clitest.OneLine(t, stderr, "unauthenticated")
	out := t.TempDir()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "analyze", "--from", from, "--service", "shop", "--tenant", "team-a",
		"--header", "Authorization: Bearer t0k", "--json", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := st.Headers[len(st.Headers)-1]; got.Get("Authorization") != "Bearer t0k" || got.Get("X-Scope-Orgid") != "team-a" {
		t.Errorf("headers served: %v", got)
	}
	var rep struct {
		Source   string `json:"source"`
		Selector string `json:"selector"`
		Top      []any  `json:"top_own_functions"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Selector != `{service_name="shop"}` || len(rep.Top) == 0 {
		t.Errorf("report.json on stdout: %v %s", err, stdout)
	}
	for _, f := range []string{"report.json", "report.md", "flame.html", "production.pb.gz"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
