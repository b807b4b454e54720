package report

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeDoc is a Document with the files given.
type fakeDoc map[string]string

func (d fakeDoc) JSON() ([]byte, error)  { return []byte("{}\n"), nil }
func (d fakeDoc) Markdown() string       { return "# r\n" }
func (d fakeDoc) WriteTable(w io.Writer) {}
func (d fakeDoc) Page() string           { return "report.md" }
func (d fakeDoc) Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	for k, v := range d {
		out[k] = []byte(v)
	}
	return out, nil
}

// What the writer writes is what its manifest lists, sub-folders (a
// fuzz run's crashers/, probe all's microloads) and the runs probe ab
// writes into folders under a claimed one included; ClearFolder removes
// exactly that and the folders it leaves empty.
func TestManifestListsWhatTheWriterWrote(t *testing.T) {
	dir := t.TempDir()
	Claim(dir)
	if err := WriteFolder(filepath.Join(dir, "runs", "get-note", "A-1"), fakeDoc{"latency.hgrm": "x", "cpu.pb.gz": "p"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFolder(dir, fakeDoc{"crashers/1-panic.txt": "boom", "flame-diff-cpu.html": "<p>"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "get-note", "A-1", ManifestName)); !os.IsNotExist(err) {
		t.Errorf("a run under the claimed folder has a manifest of its own: %v", err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if rel, _ := filepath.Rel(dir, p); !d.IsDir() && rel != ManifestName {
			written = append(written, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(written)
	if !slices.Equal(m.Files, written) {
		t.Errorf("manifest lists %v; the writer wrote %v", m.Files, written)
	}
	if want := []string{"crashers", "runs", "runs/get-note", "runs/get-note/A-1"}; !slices.Equal(m.Folders, want) {
		t.Errorf("folders %v, want %v", m.Folders, want)
	}

	// The user's file in one of probe's folders keeps that folder.
	os.WriteFile(filepath.Join(dir, "runs", "mine.txt"), []byte("mine"), 0o644)
	if err := ClearFolder(dir); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if want := []string{ManifestName, "runs"}; !slices.Equal(names, want) {
		t.Errorf("left %v, want %v", names, want)
	}
	if runs, _ := os.ReadDir(filepath.Join(dir, "runs")); len(runs) != 1 || runs[0].Name() != "mine.txt" {
		t.Errorf("runs/ holds %v, want the user's file alone", runs)
	}
}

// A report file whose name would leave the folder is not written.
func TestWriterRefusesANameOutOfTheFolder(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFolder(filepath.Join(dir, "r"), fakeDoc{"../escaped.txt": "x"}); err == nil {
		t.Error("a file named ../escaped.txt was written")
	}
	if _, err := os.Stat(filepath.Join(dir, "escaped.txt")); !os.IsNotExist(err) {
		t.Errorf("escaped.txt: %v", err)
	}
}

// A folder probe wrote before, given back with a symlink planted where a
// sub-folder of its report goes, or with a file of someone else's where a
// report file goes: nothing is written through the one or over the other.
func TestWriterWritesNothingThroughASymlinkOrOverAFileItDidNotWrite(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	Claim(dir)
	if err := WriteFolder(dir, fakeDoc{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, "verify")); err != nil {
		t.Fatal(err)
	}
	err := WriteFolder(dir, fakeDoc{"verify/1.diff": "patch"})
	if err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("err %v, want the symlink named", err)
	}
	if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
		t.Errorf("written through the symlink: %v", left)
	}
	os.Remove(filepath.Join(dir, "verify"))

	mine := filepath.Join(dir, "notes.md")
	os.WriteFile(mine, []byte("mine"), 0o644)
	err = WriteFolder(dir, fakeDoc{"notes.md": "probe's"})
	if b, _ := os.ReadFile(mine); err == nil || !strings.Contains(err.Error(), "probe overwrites no file it did not write") ||
		string(b) != "mine" {
		t.Errorf("err %v; the user's file holds %q", err, b)
	}
	// What probe wrote and listed it writes again.
	if err := WriteFolder(dir, fakeDoc{}); err != nil {
		t.Errorf("writing its own report again: %v", err)
	}
}
