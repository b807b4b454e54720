package foldercopy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The copy holds the same files with the same modes and times; a link
// inside the folder points into the copy.
func TestCopyKeepsModesTimesAndInnerLinks(t *testing.T) {
	src := filepath.Join(t.TempDir(), `a vault 'q' $x`)
	old := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for rel, body := range map[string]string{"a.md": "# a", "sub/b.md": "# b", "sub/deep/c.txt": "c"} {
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join("..", "a.md"), filepath.Join(src, "sub", "link.md")); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dst, err := Copy(src, parent)
	if err != nil {
		t.Fatal(err)
	}
	if dst != filepath.Join(parent, filepath.Base(src)) {
		t.Errorf("copy at %s, want %s", dst, filepath.Join(parent, filepath.Base(src)))
	}
	for _, rel := range []string{"a.md", "sub/b.md", "sub/deep/c.txt"} {
		a, _ := os.Stat(filepath.Join(src, rel))
		b, err := os.Stat(filepath.Join(dst, rel))
		if err != nil || a.Mode() != b.Mode() || !b.ModTime().Equal(old) || a.Size() != b.Size() {
			t.Errorf("%s: %v %v %v, want %v %v", rel, err, b.Mode(), b.ModTime(), a.Mode(), old)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dst, "sub", "link.md")); err != nil || string(got) != "# a" {
		t.Errorf("link: %q %v", got, err)
	}
	if to, _ := filepath.EvalSymlinks(filepath.Join(dst, "sub", "link.md")); !strings.HasPrefix(to, dst) {
		t.Errorf("the copied link leads to %s, outside the copy", to)
	}
}

// A link out of the folder is refused: writing through it would change
// what it points at.
func TestCopyRefusesLinksOut(t *testing.T) {
	src := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(src, "n.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(src, t.TempDir()); err == nil || !strings.Contains(err.Error(), "points outside the folder") {
		t.Errorf("err %v, want a link pointing outside", err)
	}
}
