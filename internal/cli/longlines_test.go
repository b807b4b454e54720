package cli

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Lines fit on a screen (issue 36): at most maxLongLines lines of Go
// outside testdata/, tests included, are longer than 140 characters (the
// rest are struct tags, generated code and text that reads as a unit).
const maxLongLines = 150

func TestLinesFitOnAScreen(t *testing.T) {
	long := 0
	var first []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if utf8.RuneCount(sc.Bytes()) > 140 {
				long++
				if len(first) < 10 {
					first = append(first, fmt.Sprintf("%s:%d", strings.TrimPrefix(path, repoRoot+"/"), n))
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if long > maxLongLines {
		t.Errorf("%d lines of Go over 140 characters, at most %d (wrap them: a long string as a concatenation, "+
			"a long call an argument list over lines); the first: %s", long, maxLongLines, strings.Join(first, ", "))
	}
}
