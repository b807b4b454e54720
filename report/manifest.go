package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// ManifestName is the file in a report folder that lists what probe wrote
// there. It is the writer's own list, kept beside the writer, so that
// --force (ClearFolder) and the writer can never disagree: --force removes
// exactly what a manifest lists, never a file by the look of its name.
const ManifestName = "probe-manifest.json"

// manifestFormat is the manifest's "format" field.
const manifestFormat = "probe-manifest/1"

// Manifest is probe-manifest.json: the files and folders probe wrote into
// a report folder, by slash-separated path relative to it.
type Manifest struct {
	Format  string   `json:"format"`
	Files   []string `json:"files"`
	Folders []string `json:"folders,omitempty"` // made by probe; removed once empty
}

// ErrNoManifest is a folder without probe-manifest.json: nothing in it is
// known to be probe's.
var ErrNoManifest = errors.New("no " + ManifestName)

var (
	manifestMu sync.Mutex
	claimed    = map[string]bool{} // absolute report folders of this process
)

// Claim makes dir this process's report folder: what WriteFolder writes
// into dir or any folder under it (probe ab's runs/) is listed in dir's
// manifest, so that one --force clears all of it.
func Claim(dir string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	manifestMu.Lock()
	claimed[abs] = true
	manifestMu.Unlock()
}

// manifestRoot is the folder whose manifest lists what is written into
// dir: the nearest claimed folder holding dir, or dir itself; and dir's
// path below it ("" for the root itself).
func manifestRoot(dir string) (root, below string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, ""
	}
	manifestMu.Lock()
	defer manifestMu.Unlock()
	for p := abs; ; {
		if claimed[p] {
			rel, err := filepath.Rel(p, abs)
			if err != nil || rel == "." {
				rel = ""
			}
			return p, filepath.ToSlash(rel)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return dir, ""
		}
		p = parent
	}
}

// record adds files (paths relative to root) and the folders holding them
// to root's manifest, written atomically. It runs before the files are
// written: a run killed mid-write leaves no file of probe's unlisted.
func record(root string, files []string) error {
	manifestMu.Lock()
	defer manifestMu.Unlock()
	m, err := ReadManifest(root)
	if errors.Is(err, ErrNoManifest) {
		m, err = &Manifest{Format: manifestFormat}, nil
	}
	if err != nil {
		return err
	}
	haveFile := map[string]bool{}
	for _, f := range m.Files {
		haveFile[f] = true
	}
	haveFolder := map[string]bool{}
	for _, f := range m.Folders {
		haveFolder[f] = true
	}
	for _, f := range files {
		if err := writableAt(root, f, haveFile[f]); err != nil {
			return err
		}
		if !haveFile[f] {
			haveFile[f] = true
			m.Files = append(m.Files, f)
		}
		for d := path.Dir(f); d != "." && !haveFolder[d]; d = path.Dir(d) {
			haveFolder[d] = true
			m.Folders = append(m.Folders, d)
		}
	}
	sort.Strings(m.Files)
	sort.Strings(m.Folders)
	return writeManifest(root, m)
}

// maxManifest bounds the manifest read back.
const maxManifest = 16 << 20

// ReadManifest reads dir's manifest and checks every entry: a clean path
// relative to dir (not absolute, no "..", not the manifest itself).
// ErrNoManifest says dir has none.
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestName)
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoManifest
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	if st.Size() > maxManifest {
		return nil, fmt.Errorf("%s is over %d bytes", p, maxManifest)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("%s: format %q, want %q", p, m.Format, manifestFormat)
	}
	for _, e := range append(append([]string{}, m.Files...), m.Folders...) {
		if err := manifestEntry(e); err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
	}
	return &m, nil
}

// manifestEntry checks one entry: a path that cannot leave the folder.
func manifestEntry(e string) error {
	switch {
	case e == "" || strings.ContainsAny(e, "\\\x00"):
		return fmt.Errorf("entry %q: not a relative path", e)
	case path.IsAbs(e) || filepath.IsAbs(e) || filepath.VolumeName(e) != "":
		return fmt.Errorf("entry %q is absolute", e)
	case e == ".." || strings.HasPrefix(e, "../") || strings.Contains(e, "/../") || strings.HasSuffix(e, "/.."):
		return fmt.Errorf("entry %q has ..", e)
	case path.Clean(e) != e || e == ".":
		return fmt.Errorf("entry %q is not a clean path", e)
	case e == ManifestName:
		return fmt.Errorf("entry %q is the manifest itself", e)
	}
	return nil
}

// noSymlinkOnTheWay checks that no component of rel under dir, the last
// included, is a symlink: a removal never follows one out of the folder.
// It says whether the path exists.
func noSymlinkOnTheWay(dir, rel string) (bool, error) {
	p := dir
	for _, seg := range strings.Split(rel, "/") {
		p = filepath.Join(p, seg)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return false, nil // gone, or a file now where probe made a folder
		}
		if err != nil {
			return false, err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return false, fmt.Errorf("%s (listed in %s) is a symlink: nothing was removed (probe writes no symlinks and follows "+
				"none out of the folder)", p, ManifestName)
		}
	}
	return true, nil
}

// writableAt says why probe may not write the file rel under root: a
// symlink on its way (a planted one would carry the write out of the
// folder), or, when the manifest does not list it, a file already there
// that probe did not write.
func writableAt(root, rel string, listed bool) error {
	p := root
	for _, seg := range strings.Split(rel, "/") {
		p = filepath.Join(p, seg)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink: probe writes no report file through one", p)
		}
	}
	if !listed {
		return fmt.Errorf("%s is there and %s does not list it: probe overwrites no file it did not write", p, ManifestName)
	}
	return nil
}

// existingWithNoSymlink is the entries of rels that exist under dir, each
// checked by noSymlinkOnTheWay; a symlink on the way of any is an error.
func existingWithNoSymlink(dir string, rels []string) ([]string, error) {
	var out []string
	for _, rel := range rels {
		ok, err := noSymlinkOnTheWay(dir, rel)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rel)
		}
	}
	return out, nil
}

// ClearFolder removes from dir exactly what its manifest lists: the files,
// then the listed folders that are empty then; the manifest is left
// listing nothing. Every
// entry is checked before anything is removed; one that is a symlink (or
// goes through one) refuses the whole clear. Files probe did not list
// stay, and so do the folders holding them.
func ClearFolder(dir string) error {
	manifestMu.Lock()
	defer manifestMu.Unlock()
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	files, err := existingWithNoSymlink(dir, m.Files)
	if err != nil {
		return err
	}
	folders, err := existingWithNoSymlink(dir, m.Folders)
	if err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
			continue // a folder now where probe wrote a file: not probe's
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	// Deepest first, so runs/x/A-1 goes before runs/x and runs.
	sort.Slice(folders, func(i, j int) bool { return strings.Count(folders[i], "/") > strings.Count(folders[j], "/") })
	for _, f := range folders {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if ents, err := os.ReadDir(p); err == nil && len(ents) == 0 {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	// The folder stays a report folder, now with nothing of probe's in it:
	// a run that fails before it writes leaves --force still usable.
	return writeManifest(dir, &Manifest{Format: manifestFormat, Files: []string{}})
}

func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, ManifestName), append(b, '\n'))
}
