package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/report"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func okServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	return srv
}

// Issue 26's case: --force on a folder of the user's own files whose
// names look like probe's (ab.go, fuzz.go, report.pdf, a profile, a
// page, a sub-folder holding a report.json) is refused, and nothing in
// it is touched.
func TestForceRefusesAFolderProbeDidNotWrite(t *testing.T) {
	out := t.TempDir()
	writeFiles(t, out, map[string]string{
		"ab.go": "package ab", "fuzz.go": "package fuzz", "report.pdf": "%PDF",
		"data.pb.gz": "data", "diffusion.html": "<p>", "flame-notes.html": "<p>",
		"thesis/report.json": "{}", "thesis/chapter1.tex": "\\chapter{}",
	})
	before := clitest.TreeState(t, out)
	srv := okServer(t)
	code, _, stderr := probeCmd.Run(t, context.Background(), "http", "--target", srv.URL, "--path", "/",
		"--duration", "100ms", "--warmup", "0", "--concurrency", "1", "--out", out, "--force")
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	clitest.OneLine(t, stderr, report.ManifestName)
	after := clitest.TreeState(t, out)
	for p, body := range before {
		if after[p] != body {
			t.Errorf("%s was changed or removed", p)
		}
	}
	if len(after) != len(before) {
		t.Errorf("the folder now holds %d paths, it held %d", len(after), len(before))
	}
}

// An earlier run's folder with the user's files in it: --force clears
// what the earlier run listed in its manifest, and only that.
func TestForceClearsOnlyTheEarlierRunsFiles(t *testing.T) {
	out := t.TempDir()
	srv := okServer(t)
	args := []string{"http", "--target", srv.URL, "--path", "/", "--duration", "100ms", "--warmup", "0", "--concurrency", "1", "--out", out}
	if code, _, stderr := probeCmd.Run(t, context.Background(), args...); code != exitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	m, err := report.ReadManifest(out)
	if err != nil {
		t.Fatalf("the run's manifest: %v", err)
	}
	if !slices.Contains(m.Files, "report.json") || !slices.Contains(m.Files, "report.md") {
		t.Errorf("manifest files %v: want report.json listed", m.Files)
	}
	mine := map[string]string{"notes.txt": "mine", "flame-mine.html": "mine", "ab.go": "package ab", "old/report.json": "{}"}
	writeFiles(t, out, mine)
	if err := shared.ClaimOut(out, true); err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		if _, err := os.Lstat(filepath.Join(out, f)); !os.IsNotExist(err) {
			t.Errorf("the earlier run's %s is still there: %v", f, err)
		}
	}
	if m, err := report.ReadManifest(out); err != nil || len(m.Files)+len(m.Folders) > 0 {
		t.Errorf("the manifest after --force: %+v, %v; want one listing nothing", m, err)
	}
	for f, body := range mine {
		if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || string(b) != body {
			t.Errorf("--force took the user's %s: %v", f, err)
		}
	}
	// The run goes on into the folder, and lists what it writes.
	if code, _, stderr := probeCmd.Run(t, context.Background(), append(args, "--force")...); code != exitOK {
		t.Fatalf("--force run: exit %d: %s", code, stderr)
	}
	if m, err := report.ReadManifest(out); err != nil || len(m.Files) == 0 {
		t.Errorf("manifest after the second run: %v, %v", m, err)
	}
	for f := range mine {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the second run lost the user's %s: %v", f, err)
		}
	}
}

// A manifest entry that leaves the folder or goes through a symlink
// refuses --force before anything is removed.
func TestForceRefusesABadManifest(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "precious.txt")
	writeFiles(t, filepath.Dir(outside), map[string]string{"precious.txt": "keep"})
	for name, entry := range map[string]string{"absolute": outside, "dotdot": "../precious.txt", "symlink": "link.txt",
		"through a symlinked folder": "d/precious.txt"} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			writeFiles(t, out, map[string]string{"report.json": "{}"})
			os.Symlink(outside, filepath.Join(out, "link.txt"))
			os.Symlink(filepath.Dir(outside), filepath.Join(out, "d"))
			manifest := `{"format": "probe-manifest/1", "files": ["report.json", "` + entry + `"]}`
			writeFiles(t, out, map[string]string{report.ManifestName: manifest})
			err := shared.ClaimOut(out, true)
			if _, ok := err.(shared.UsageError); !ok {
				t.Fatalf("claimOut: %v, want a usage error", err)
			}
			if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
				t.Errorf("a file was removed before the manifest was refused: %v", err)
			}
			if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
				t.Errorf("the file outside: %q, %v", b, err)
			}
		})
	}
}

// A folder holding only its manifest (a cleared one whose run wrote
// nothing) is empty for a new run, without --force.
func TestOutHoldingOnlyTheManifestIsEmpty(t *testing.T) {
	out := t.TempDir()
	writeFiles(t, out, map[string]string{"report.json": "{}",
		report.ManifestName: `{"format": "probe-manifest/1", "files": ["report.json"]}`})
	if err := shared.ClaimOut(out, true); err != nil {
		t.Fatal(err)
	}
	if err := shared.ClaimOut(out, false); err != nil {
		t.Errorf("a folder holding only its manifest: %v", err)
	}
}
