package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/tools/go/packages"
)

// moduleRoot is the folder holding the go.mod that dir belongs to.
func moduleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is in no Go module (no go.mod above it)", dir)
		}
	}
}

// sourceFile is the module's file a profile's path names: the same path, or,
// for a binary built elsewhere or with -trimpath, the one file whose path
// ends the same way (the longest common tail wins; a tie is refused).
func sourceFile(root, profilePath string) (string, error) {
	// Cleaned first: root/../elsewhere/main.go starts with root but is not under it.
	if p := filepath.Clean(profilePath); strings.HasPrefix(p, root+string(filepath.Separator)) {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	want := strings.Split(filepath.ToSlash(profilePath), "/")
	best, bestLen, tie := "", 0, false
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		have := strings.Split(filepath.ToSlash(p), "/")
		n := 0
		for n < len(have) && n < len(want) && have[len(have)-1-n] == want[len(want)-1-n] {
			n++
		}
		switch {
		case n > bestLen:
			best, bestLen, tie = p, n, false
		case n == bestLen && n > 0:
			tie = true
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if bestLen == 0 || tie {
		return "", fmt.Errorf("%s: no file of the module under %s is that file (was the profile taken of this source?)",
			profilePath, root)
	}
	return best, nil
}

// loaded keeps each package loadFile type-checked, by its root and file:
// --verify rewrites several findings of one package, and each load runs
// the go command. A file of the package or the module's go.mod changed
// since is loaded again. Rewrites edit the source's bytes, never the
// syntax trees, so a loaded package is shared as it is.
var loaded = struct {
	sync.Mutex
	pkgs map[string]loadedPackage
}{pkgs: map[string]loadedPackage{}}

type loadedPackage struct {
	pkg   *packages.Package
	stamp map[string]fileStamp // the package's files and go.mod as loaded
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// stampsOf is the size and time of each file; a file gone is its zero.
func stampsOf(files []string) map[string]fileStamp {
	out := make(map[string]fileStamp, len(files))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			out[f] = fileStamp{fi.Size(), fi.ModTime()}
		} else {
			out[f] = fileStamp{}
		}
	}
	return out
}

func (l loadedPackage) current() bool {
	files := make([]string, 0, len(l.stamp))
	for f := range l.stamp {
		files = append(files, f)
	}
	now := stampsOf(files)
	for f, st := range l.stamp {
		if now[f] != st {
			return false
		}
	}
	return true
}

// loadFile type-checks the package holding file, from source, with the
// user's go command (go list underneath), once while its files stay as
// they are.
func loadFile(root, file string) (*packages.Package, error) {
	key := root + "\x00" + file
	loaded.Lock()
	defer loaded.Unlock()
	if l, ok := loaded.pkgs[key]; ok && l.current() {
		return l.pkg, nil
	}
	pkg, err := loadFileFresh(root, file)
	if err != nil {
		return nil, err
	}
	files := append([]string{filepath.Join(root, "go.mod")}, pkg.CompiledGoFiles...)
	loaded.pkgs[key] = loadedPackage{pkg: pkg, stamp: stampsOf(files)}
	return pkg, nil
}

func loadFileFresh(root, file string) (*packages.Package, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedSyntax |
			packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		Dir:   root,
		Tests: false,
	}
	pkgs, err := packages.Load(cfg, "file="+file)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %v", file, err)
	}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("loading %s: %s", file, p.Errors[0].Error())
		}
		for _, f := range p.CompiledGoFiles {
			if f == file {
				return p, nil
			}
		}
		for _, f := range p.GoFiles {
			if f == file { // compiled as cgo's rewrite of it, not as written
				return nil, errors.New(file + ` imports "C": --verify rewrites no cgo file`)
			}
		}
	}
	return nil, errors.New(file + ": no package of the module holds it (a file for another OS or build tag?)")
}
