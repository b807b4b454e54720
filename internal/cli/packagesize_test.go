package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A package a newcomer can read (issue 36): no folder of the module holds
// more than maxPackageLines lines of non-test Go; one that grows past it
// is split along its own seams, as report, internal/cli and the fixture
// were.
const maxPackageLines = 4000

func TestPackagesStayReadable(t *testing.T) {
	lines := map[string]int{}
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines[filepath.Dir(path)] += bytes.Count(b, []byte("\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 20 {
		t.Fatalf("%d packages read under %s: not the module", len(lines), repoRoot)
	}
	for dir, n := range lines {
		if n > maxPackageLines {
			t.Errorf("%s: %d lines of non-test Go, over %d: split it along its seams",
				strings.TrimPrefix(dir, repoRoot+"/"), n, maxPackageLines)
		}
	}
}
