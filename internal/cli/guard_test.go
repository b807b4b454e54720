package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
)

// An --out that holds an earlier run is refused before anything runs;
// --force clears what probe's manifest lists and keeps the rest.
func TestOutFolderIsNotMixed(t *testing.T) {
	srv := okServer(t)
	out := t.TempDir()
	args := []string{"http", "--target", srv.URL, "--path", "/", "--duration", "200ms", "--warmup", "0", "--concurrency", "1", "--out", out}
	if code, _, stderr := probeCmd.Run(t, context.Background(), args...); code != exitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	stale := filepath.Join(out, "cpu.pb.gz") // probe's name, but not in its manifest: the user's
	os.WriteFile(stale, []byte("old"), 0o644)
	mine := filepath.Join(out, "notes.txt")
	os.WriteFile(mine, []byte("the user's"), 0o644)
	code, _, stderr := probeCmd.Run(t, context.Background(), args...)
	if code != exitUsage {
		t.Errorf("second run into the same folder: exit %d", code)
	}
	clitest.OneLine(t, stderr, "is not empty")
	if code, _, stderr := probeCmd.Run(t, context.Background(), append(args, "--force")...); code != exitOK {
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
// never leaves loopback (e2e: a fixture probe starts gets it by the
// environment).
func TestFixtureKeyStaysOffTheCommandLine(t *testing.T) {
	code, _, stderr := probeCmd.Run(t, context.Background(), "fixture", "serve", "--key", "s3cret")
	if code != exitUsage {
		t.Errorf("--key: exit %d", code)
	}
	clitest.OneLine(t, stderr, "--key-file")
	code, _, stderr = probeCmd.Run(t, context.Background(), "fixture", "serve", "--addr", "0.0.0.0:0", "--notes", "5")
	if code != exitUsage {
		t.Errorf("default key off loopback: exit %d", code)
	}
	clitest.OneLine(t, stderr, "is public")
}
