// Package clitest is, for tests only, probe's command line called in the
// test's process, and what a refused one must look like: the command
// package's tests and the end-to-end tests hold the same contract (one
// clear line, an exit code, never a stack trace); and the reads of a
// server that those tests make.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/report"
)

// Probe is probe's command line as a function: cli.Run.
type Probe func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Run runs the command line args and returns its exit code, stdout and
// stderr.
func (p Probe) Run(t testing.TB, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := p(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// BadInput runs a command line that must fail with code and one line
// holding want, and nothing on stdout.
func (p Probe) BadInput(t testing.TB, args []string, code int, want string) {
	t.Helper()
	got, stdout, stderr := p.Run(t, context.Background(), append(args, "--out", t.TempDir())...)
	if got != code {
		t.Errorf("%v: exit %d, want %d (stderr %q)", args, got, code, stderr)
	}
	OneLine(t, stderr, want)
	if stdout != "" {
		t.Errorf("%v: stdout %q", args, stdout)
	}
}

// OneLine: a bad command line gets one clear line, never a stack trace.
func OneLine(t testing.TB, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "probe: ") || !strings.Contains(last, want) || StackTrace(stderr) {
		t.Errorf("stderr %q: want one line 'probe: …%s…'", stderr, want)
	}
}

// goStack is the first line of a Go panic or of one goroutine's stack in a
// trace. Words alone ("goroutine counts stand in", "panic" in a reply
// quoted back) are not one: probe's own warnings name goroutines.
var goStack = regexp.MustCompile(`(?m)^(panic: |fatal error: |goroutine \d+ (.* )?\[.*\]:$)`)

// StackTrace says whether output holds a Go stack trace.
func StackTrace(output string) bool { return goStack.MatchString(output) }

// ReadReport is the run's report.json in the report folder dir.
func ReadReport(t testing.TB, dir string) *report.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Run
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// WriteFile writes src to a file called name in a folder of the test's
// (a --file, a scenario, a .proto) and returns its path.
func WriteFile(t testing.TB, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Get is a GET of url by client: the response (its body closed) and the
// body's first MiB. An error fails the test.
func Get(t testing.TB, client *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TreeState is every entry under dir (by its path in dir): its kind,
// mode, size, time and content, to tell that nothing in dir was touched.
func TreeState(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		state := fmt.Sprintf("%v %d %s", info.Mode(), info.Size(), info.ModTime().Format(time.RFC3339Nano))
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			state += " " + string(b)
		}
		out[rel] = state
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
