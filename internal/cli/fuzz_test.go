package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/cli/fuzzing"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/fuzzreport"

	"github.com/probehq/probe/internal/testbuild"
)

// buildVictim builds a server that a fuzz finds crashes in: one of the
// probes' testdata, dir under ../../probes.
func buildVictim(t *testing.T, dir string) string {
	return testbuild.Program(t, filepath.Join("../../probes", dir))
}

func TestFuzzBadInput(t *testing.T) {
	victim := buildVictim(t, "fuzz/testdata/victim")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fuzz"}, exitUsage, "usage: probe fuzz notequery"},
		{[]string{"fuzz", "http", "--path", "/x?d={int}"}, exitUsage, "--cmd"},
		{[]string{"fuzz", "http", "--cmd", victim, "--path", "/x?d=1"}, exitUsage, "no placeholder"},
		{[]string{"fuzz", "http", "--cmd", victim, "--path", "/x?d={float}"}, exitUsage, "unknown placeholder {float}"},
		{[]string{"fuzz", "http", "--cmd", victim, "--path", "/x?d={int}", "--target", "http://10.1.2.3:80"}, exitUsage, "--allow-remote"},
		{[]string{"fuzz", "notequery", "--mem-limit", "lots"}, exitUsage, "--mem-limit"},
		{[]string{"fuzz", "http", "--cmd", victim + " -addr 127.0.0.1:$PORT -home $HOME", "--path", "/x?d={int}"}, exitUsage,
			"$HOME is not expanded (probe runs the command without a shell)"},
		{[]string{"fuzz", "notequery", "--fixture-mode", "lazy"}, exitUsage, "--fixture-mode"},
		{[]string{"fuzz", "http", "--cmd", victim, "--path", "/x", "--method", "{str}"}, exitUsage, "want a method such as GET, " +
			"or the hole {method}"},
		{[]string{"fuzz", "http", "--cmd", victim, "--path", "/x/{method}"}, exitUsage, "stands only as the whole method"},
		{[]string{"fuzz", "http", "--cmd", victim, "--path", "/x", "--header", "X-{str}: 1"}, exitUsage, "not names"},
		{[]string{"fuzz", "http", "--cmd", "/nonexistent/server -addr {addr}", "--path", "/x?d={int}"}, exitError,
			"start /nonexistent/server: no such file or directory"},
		{[]string{"fuzz", "http", "--cmd", victim + " -mute -addr {addr}", "--path", "/x?d={int}", "--timeout", "1s"}, exitError,
			"answered no request within 1s"},
	} {
		probeCmd.BadInput(t, tc.args, tc.code, tc.want)
	}
}

// A bad flag of fuzz is named before --out is claimed: with a folder that
// holds an earlier run, the line is the flag's, not the folder's.
func TestFuzzChecksFlagsBeforeClaimingOut(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "report.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mem-limit", "lots"}, "--mem-limit"},
		{[]string{"--shrink-time", "-1s"}, "--shrink-time"},
		{[]string{"--inputs", "-5"}, "--inputs must not be negative"},
		{[]string{"--fixture-mode", "lazy"}, "--fixture-mode"},
	} {
		code, _, stderr := probeCmd.Run(t, context.Background(), append([]string{"fuzz", "notequery", "--out", out}, tc.args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		clitest.OneLine(t, stderr, tc.want)
	}
}

// fuzzReport is report.json of probe fuzz.
type fuzzReport = fuzzreport.FuzzReport

// TestFuzzCtrlC: an interrupted fuzz run writes what it found and exits 130.
func TestFuzzCtrlC(t *testing.T) {
	victim := buildVictim(t, "fuzz/testdata/victim")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out := t.TempDir()
	code, _, stderr := probeCmd.Run(t, ctx, "fuzz", "http", "--cmd", victim+" -addr {addr}", "--path", "/item?i={int}", "--duration",
		"60s", "--out", out)
	if code != exitInterrupted {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep fuzzReport
	if err := json.Unmarshal(b, &rep); err != nil || rep.Fuzz == nil || rep.Fuzz.Inputs == 0 {
		t.Errorf("report after Ctrl-C: %v, fuzz %+v", err, rep.Fuzz)
	}
	if clitest.StackTrace(stderr) {
		t.Errorf("stack trace on stderr: %s", stderr)
	}
}

// The command a crasher file says starts the target must start the same
// argv that --cmd gave, quotes and all.
func TestServerCommandIsShownAsAShellReadsIt(t *testing.T) {
	f := &fuzzing.FuzzCommand{Cmd: `sh -c 'exec ./server --addr {addr} --name "a b"'`, Request: shared.RequestFlags{Path: "/x?n={int}", Method: "GET"}}
	_, setting, err := f.HTTPTarget(0)
	if err != nil {
		t.Fatal(err)
	}
	shown := strings.TrimPrefix(setting.Server, "PORT=8080 ")
	got, err := shell.Fields(shown, nil)
	if err != nil {
		t.Fatalf("%s: %v", shown, err)
	}
	want := []string{"sh", "-c", `exec ./server --addr 127.0.0.1:8080 --name "a b"`}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("shown %s, read back as %q, want %q", setting.Server, got, want)
	}
}

// TestFuzzHTTPHeaderAndMethodHoles: probe fuzz http finds a panic a header
// value causes and one the method causes, shrinks each within its hole
// and writes a repro that sends the header with -H and the method with -X.
func TestFuzzHTTPHeaderAndMethodHoles(t *testing.T) {
	victim := buildVictim(t, "fuzz/testdata/victim")
	for _, tc := range []struct {
		name string
		args []string
		want func(input, repro string) bool
	}{
		{"header", []string{"--path", "/region", "--header", "X-Region: {str}"}, func(input, repro string) bool {
			// The victim panics on a value of 1000 bytes or more, whatever
			// they are: shrunk within the hole, the value is 1000 bytes
			// (which bytes depends on the extreme that crashed first).
			value, ok := strings.CutPrefix(input, "GET /region [X-Region: ")
			value, ok2 := strings.CutSuffix(value, "]")
			return ok && ok2 && len(value) == 1000 && strings.Contains(repro, "-H 'X-Region: "+value[:8])
		}},
		{"method", []string{"--path", "/verb", "--method", "{method}"}, func(input, repro string) bool {
			method, _, _ := strings.Cut(input, " ")
			return len(method) == 16 && strings.Contains(repro, " -X "+report.ShellQuote(method)+" ")
		}},
	} {
		args := append([]string{"fuzz", "http", "--cmd", victim + " -addr {addr}", "--duration", "2s", "--shrink-time", "20s",
			"--concurrency", "2", "--json", "--out", t.TempDir()}, tc.args...)
		code, stdout, stderr := probeCmd.Run(t, context.Background(), args...)
		if code != exitError {
			t.Fatalf("%s: exit %d, want 1 (a crash found): %s", tc.name, code, stderr)
		}
		var rep fuzzReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(rep.Crashes) != 1 {
			t.Fatalf("%s: %d crashes: %+v", tc.name, len(rep.Crashes), rep.Crashes)
		}
		c := rep.Crashes[0]
		if c.Class != "panic" || !c.Confirmed || !tc.want(c.Input, c.Repro) {
			t.Errorf("%s: %s %q\nrepro %.300s\nshrink %s", tc.name, c.Class, c.Input, c.Repro, c.Shrink)
		}
	}
}
