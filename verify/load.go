package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	if _, err := os.Stat(profilePath); err == nil && strings.HasPrefix(profilePath, root+string(filepath.Separator)) {
		return profilePath, nil
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

// loadFile type-checks the package holding file, from source, with the
// user's go command (go list underneath).
func loadFile(root, file string) (*packages.Package, error) {
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
	}
	return nil, errors.New(file + ": no package of the module holds it (a file for another OS or build tag?)")
}
