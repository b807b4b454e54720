package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/fixtures"
	"github.com/probehq/probe/internal/testrepo"
	"github.com/probehq/probe/report/fuzzreport"
	"github.com/probehq/probe/target"
)

// startFixture starts `probe fixture serve` (this test binary stands in
// for probe: TestMain) on a free loopback port with args, as probe starts
// it: the key goes by the environment, never on the command line.
func startFixture(t *testing.T, key string, args ...string) *target.Child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{exe, "fixture", "serve", "--addr", "127.0.0.1:0"}, args...)
	return startChild(t, target.ChildSpec{Argv: argv, Env: []string{fixtures.KeyEnv + "=" + key}, Wait: 3 * time.Minute})
}

// A fixture probe starts gets its key by the environment: its pprof
// command line does not show it. (internal/cli's test of the same name
// checks the flags that refuse a key on the command line.)
func TestFixtureKeyStaysOffTheCommandLine(t *testing.T) {
	child := startFixture(t, "s3cret-key-123", "--mode", "load-time", "--notes", "20")
	if status, cmdline := getBody(t, child.URL+"/debug/pprof/cmdline"); status != 200 || strings.Contains(cmdline, "s3cret") {
		t.Errorf("cmdline %d %q", status, cmdline)
	}
	req, _ := http.NewRequest("GET", child.URL+"/admin/settings", nil)
	req.Header.Set("Authorization", "Bearer s3cret-key-123")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("the key from the environment: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
}

// TestFuzzNoteQueryFixture is issue 6's acceptance, shortened: the
// per-request fixture dies of a stack overflow that is found and shrunk;
// the load-time fixture survives the same search and answers the shrunk
// crasher with an error.
func TestFuzzNoteQueryFixture(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "fuzz", "notequery", "--duration", "20s", "--shrink-time", "40s",
		"--json", "--out", out)
	if code != exitError {
		t.Fatalf("per-request: exit %d, want 1 (crashes found): %s", code, stderr)
	}
	var rep fuzzreport.FuzzReport
	decodeStdout(t, "per-request", stdout, &rep)
	// The crasher to replay against load-time mode: seed 002's link-walk if
	// the search found it, else any stack overflow whose input fits the
	// report whole. As found, not shrunk: the shrunk one is the threshold
	// of the fuzzed fixture's 64 MB stack, which a load-time worker's
	// 128 MB stack survives.
	var overflow string
	for _, c := range rep.Crashes {
		if c.Class != "stack-overflow" || !c.Confirmed || !strings.Contains(c.Shrink, "shrunk") {
			continue
		}
		if _, err := os.Stat(filepath.Join(out, c.File)); err != nil {
			t.Errorf("crasher file: %v", err)
		}
		if !strings.HasPrefix(c.Repro, "curl ") {
			t.Errorf("repro %q", c.Repro)
		}
		in := c.Input
		if c.Original != "" {
			in = c.Original
		}
		if strings.Contains(in, "bytes in all)") {
			continue // cut short in the report
		}
		if overflow == "" || c.Endpoint == "/q/link-walk" {
			overflow = in
		}
	}
	if overflow == "" {
		t.Fatalf("no confirmed, shrunk stack overflow among %+v", rep.Crashes)
	}

	code, stdout, stderr = probeCmd.Run(t, context.Background(), "fuzz", "notequery", "--fixture-mode", "load-time", "--duration", "15s",
		"--json", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("load-time: exit %d: %s", code, stderr)
	}
	rep = fuzzreport.FuzzReport{}
	decodeStdout(t, "load-time", stdout, &rep)
	if rep.Fuzz == nil {
		t.Fatalf("load-time: no fuzz in report.json: %.300s", stdout)
	}
	if len(rep.Crashes) != 0 || rep.Fuzz.Inputs == 0 || rep.Fuzz.Rejected == 0 {
		t.Errorf("load-time: %d crashes, %d inputs, %d rejected", len(rep.Crashes), rep.Fuzz.Inputs, rep.Fuzz.Rejected)
	}
	for status := range rep.Fuzz.Statuses {
		if strings.HasPrefix(status, "5") {
			t.Errorf("load-time answered %s: %v", status, rep.Fuzz.Statuses)
		}
	}

	// The crasher, sent to a load-time fixture: an error reply.
	child := startFixture(t, fixtures.DefaultKey, "--mode", "load-time", "--notes", "60", "--max-stack", "64MB")
	method, rest, _ := strings.Cut(overflow, " ")
	path, body, _ := strings.Cut(rest, " ")
	req, _ := http.NewRequest(method, child.URL+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("load-time fixture, %s: %v", overflow, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(b), "stack overflow") {
		t.Errorf("load-time answered the crasher %s with %d %s", overflow, resp.StatusCode, b)
	}
}

// Ctrl-C during ab --git's build ends the build's whole process group at
// once, removes the worktrees and exits 130.
func TestABBuildInterrupted(t *testing.T) {
	repo := testrepo.GitServer(t)
	marker := "probe-test-build-" + filepath.Base(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	code, _, stderr := probeCmd.Run(t, ctx, "ab", "--git", repo, "--before-ref", "v1", "--after-ref", "v2",
		"--build", "sh -c 'sleep 60 & sleep 61; echo "+marker+"'", "http", "--path", "/work", "--out", t.TempDir())
	if code != exitInterrupted {
		t.Errorf("exit %d, want 130: %s", code, stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s to stop", took)
	}
	// The group is killed at once; a loaded machine may take a moment to
	// reap it.
	var out []byte
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if out, _ = exec.Command("pgrep", "-f", "sleep 6[01]").Output(); len(out) == 0 {
			break
		}
	}
	if len(out) > 0 {
		// Only this test starts such sleeps under its repository's worktree.
		t.Errorf("the build's children live on: pids %s", out)
	}
	if out, err := exec.Command("git", "-C", repo, "worktree", "list").Output(); err != nil || strings.Count(string(out), "\n") != 1 {
		t.Errorf("worktrees left: %s (%v)", out, err)
	}
}
