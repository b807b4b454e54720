package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/target"
)

// BuildError is a build that failed, told in one line: the first compiler
// error, or go's own complaint.
type BuildError struct{ Line string }

func (e *BuildError) Error() string { return "build failed: " + e.Line }

// compilerError is a line of go build's output that names a position.
var compilerError = regexp.MustCompile(`^\S+\.go:\d+(:\d+)?: `)

// Build builds the main package in dir to out with the go command on PATH
// (the user's Go), reading the sources overlay names (a go build -overlay
// file) in place of theirs; overlay may be empty.
func Build(ctx context.Context, dir, overlay, out string) error {
	if err := mainPackage(ctx, dir); err != nil {
		return err
	}
	args := []string{"go", "build", "-o", out}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd, output := target.BuildCommand(ctx, dir, append(args, ".")...)
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("building %s: %w", dir, ctx.Err())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return fmt.Errorf("building %s: %v", dir, err) // no go command, most likely
	}
	return &BuildError{Line: textline.Of(firstError(output.String()), textline.Max)}
}

// firstError is the first compiler error in go build's output, or its first
// line that is not a "# package" header.
func firstError(output string) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	for _, l := range lines {
		if compilerError.MatchString(l) {
			return l
		}
	}
	for _, l := range lines {
		if l != "" && !strings.HasPrefix(l, "# ") {
			return l
		}
	}
	return "go build exited with no output"
}

// mainPackage checks that dir holds a main package: go build -o of any other
// writes an archive and succeeds.
func mainPackage(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "list", "-f", "{{.Name}}", ".")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	switch name := strings.TrimSpace(string(out)); {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("building %s: %w", dir, ctx.Err())
	case err != nil:
		return &BuildError{Line: textline.Of(firstError(stderr.String()), textline.Max)}
	case name != "main":
		return &BuildError{Line: textline.Of(dir+" holds package "+name+", not a main package", textline.Max)}
	}
	return nil
}
