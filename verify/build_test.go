package verify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildSaysTheFirstCompilerErrorInOneLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/b\n\ngo 1.22\n"), 0o644)
	broken := "package main\n\nfunc main() {\n\tx := 1\n\ty := \"a\" + 1\n}\n"
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(broken), 0o644)
	err := Build(context.Background(), dir, "", filepath.Join(t.TempDir(), "bin"))
	var be *BuildError
	if !errors.As(err, &be) || !strings.HasPrefix(be.Line, "./main.go:4:2: ") || strings.Contains(be.Line, "\n") {
		t.Errorf("got %v, want the first error (main.go:4) in one line", err)
	}
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package lib\n"), 0o644)
	err = Build(context.Background(), dir, "", filepath.Join(t.TempDir(), "bin"))
	if !errors.As(err, &be) || !strings.Contains(be.Line, "holds package lib, not a main package") {
		t.Errorf("a library: got %v", err)
	}
	os.Remove(filepath.Join(dir, "main.go"))
	err = Build(context.Background(), dir, "", filepath.Join(t.TempDir(), "bin"))
	if !errors.As(err, &be) || !strings.Contains(be.Line, "no Go files") {
		t.Errorf("an empty folder: got %v", err)
	}
}
