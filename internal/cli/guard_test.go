package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An --out that holds an earlier run is refused before anything runs;
// --force clears what probe's manifest lists and keeps the rest.
func TestOutFolderIsNotMixed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	out := t.TempDir()
	args := []string{"http", "--target", srv.URL, "--path", "/", "--duration", "200ms", "--warmup", "0", "--concurrency", "1", "--out", out}
	if code, _, stderr := runProbe(t, context.Background(), args...); code != exitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	stale := filepath.Join(out, "cpu.pb.gz") // probe's name, but not in its manifest: the user's
	os.WriteFile(stale, []byte("old"), 0o644)
	mine := filepath.Join(out, "notes.txt")
	os.WriteFile(mine, []byte("the user's"), 0o644)
	code, _, stderr := runProbe(t, context.Background(), args...)
	if code != exitUsage {
		t.Errorf("second run into the same folder: exit %d", code)
	}
	oneLine(t, stderr, "is not empty")
	if code, _, stderr := runProbe(t, context.Background(), append(args, "--force")...); code != exitOK {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("--force took a file probe did not write: %v", err)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "the user's" {
		t.Errorf("--force took the user's file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Error(err)
	}
}

// The fixture's key never goes on a command line, and its default key
// never leaves loopback.
func TestFixtureKeyStaysOffTheCommandLine(t *testing.T) {
	code, _, stderr := runProbe(t, context.Background(), "fixture", "serve", "--key", "s3cret")
	if code != exitUsage {
		t.Errorf("--key: exit %d", code)
	}
	oneLine(t, stderr, "--key-file")
	code, _, stderr = runProbe(t, context.Background(), "fixture", "serve", "--addr", "0.0.0.0:0", "--notes", "5")
	if code != exitUsage {
		t.Errorf("default key off loopback: exit %d", code)
	}
	oneLine(t, stderr, "is public")
	if testing.Short() {
		return
	}
	// A fixture probe starts gets its key by the environment: its pprof
	// command line does not show it.
	child, err := startFixture(context.Background(), fixtureStart{mode: "load-time", notes: 20, key: "s3cret-key-123"})
	if err != nil {
		t.Fatal(err)
	}
	defer child.Stop()
	resp, err := http.Get(child.URL + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	cmdline, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(cmdline), "s3cret") {
		t.Errorf("cmdline %d %q", resp.StatusCode, cmdline)
	}
	req, _ := http.NewRequest("GET", child.URL+"/admin/settings", nil)
	req.Header.Set("Authorization", "Bearer s3cret-key-123")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("the key from the environment: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
}

// Ctrl-C during ab --git's build ends the build's whole process group at
// once, removes the worktrees and exits 130.
func TestABBuildInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds in a git repository")
	}
	repo := gitRepo(t)
	marker := "probe-test-build-" + filepath.Base(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	code, _, stderr := runProbe(t, ctx, "ab", "--git", repo, "--before-ref", "v1", "--after-ref", "v2",
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
