package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-jsonnet"

	"github.com/probehq/probe/lib/crash"
)

// A user's Jsonnet file (--rules, --file) is evaluated in a child process,
// as the fixture evaluates note queries in workers: a tailstrict recursion
// overflows the goroutine stack, a fatal error no recover catches, and a
// program can ask for any amount of memory. The child runs under a stack
// cap, a memory cap (RLIMIT_DATA, as target.ChildSpec) and a time limit;
// its death is one line.

const (
	jsonnetMemLimit = 4 << 30
	jsonnetStack    = 64 << 20
	jsonnetTimeout  = 20 * time.Second
	jsonnetMaxOut   = 64 << 20
)

// EvalJsonnetGuarded evaluates a Jsonnet file in a child process: the
// program exe run with the words child and the path, which must call
// RunJsonnetChild (a target file's and --rules' evaluator).
func EvalJsonnetGuarded(ctx context.Context, path, exe string, child ...string) ([]byte, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, jsonnetTimeout)
	defer cancel()
	args := append([]string{"-c", `ulimit -d "$1" && shift && exec "$@"`, "sh", strconv.Itoa(jsonnetMemLimit >> 10), exe}, child...)
	cmd := exec.CommandContext(ctx, "/bin/sh", append(args, path)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &stdout, n: jsonnetMaxOut}
	cmd.Stderr = &limitedWriter{w: &stderr, n: 64 << 10}
	err := cmd.Run()
	switch {
	case err == nil:
		return stdout.Bytes(), nil
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("%s: the evaluation did not end within %s", path, jsonnetTimeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && !strings.Contains(stderr.String(), "goroutine ") {
		return nil, errors.New(firstLine(stderr.String())) // the evaluator's own error, with its position
	}
	if c, ok := crash.ClassifyExit(err.Error(), stderr.String()); ok {
		why := map[string]string{crash.StackOverflow: "a recursion without end?", crash.OutOfMemory: "it asked for more than 4 GiB"}[c.Class]
		return nil, fmt.Errorf("%s: the evaluation died of %s (%s)", path, c.Class, strings.TrimSpace(why))
	}
	return nil, fmt.Errorf("%s: the evaluation failed: %v", path, err)
}

// RunJsonnetChild evaluates one file and prints its JSON: the child's
// side, under the stack cap; it returns the exit status (1: the
// evaluator's error, one line with its position; 2: a bad call).
func RunJsonnetChild(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: probe __jsonnet FILE")
		return 2
	}
	debug.SetMaxStack(jsonnetStack)
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{filepath.Dir(args[0])}})
	out, err := vm.EvaluateFile(args[0])
	if err != nil {
		fmt.Fprintln(stderr, firstLine(strings.TrimSpace(err.Error())))
		return 1
	}
	io.WriteString(stdout, out)
	return 0
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// limitedWriter keeps the first n bytes and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
