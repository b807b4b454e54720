package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/probes"
)

// buildAgentsBroken builds testdata/agentsbroken, the MCP server with a
// seeded fault.
func buildAgentsBroken(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentsbroken")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/agentsbroken")
	if os.Getenv("GOTOOLCHAIN") == "" {
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=go1.27.3")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/agentsbroken: %v\n%s", err, out)
	}
	return bin
}

// startAgentsBroken runs it with trap ("": none) and is its URL.
func startAgentsBroken(t *testing.T, bin, trap string) string {
	t.Helper()
	child, err := probes.Start(context.Background(), probes.ChildSpec{Argv: []string{bin, "-addr", "127.0.0.1:0", "-trap", trap}, Wait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Stop() })
	return child.URL
}

// Each seeded fault is caught, named (the item, the version, the word) and
// exits 1 with one line for its kind; the server without one passes.
func TestAgentsCatchTheTraps(t *testing.T) {
	bin := buildAgentsBroken(t)
	for _, c := range []struct {
		trap string
		code int
		want *regexp.Regexp
	}{
		{"", exitOK, regexp.MustCompile(`checked: [0-9,]+ versions, search index current`)},
		{"drop", exitError, regexp.MustCompile(`(?m)^probe: lost writes on 1 of 20 items: p1/\d\d: version \d+ acknowledged to two writes; \d+ writes acknowledged after version 1, final version \d+`)},
		{"dupe", exitError, regexp.MustCompile(`(?m)^probe: lost writes on 1 of 20 items: p1/\d\d: version \d+ acknowledged to two writes$`)},
		{"stale", exitError, regexp.MustCompile(`(?m)^probe: search index stale on 1 of 20 items after 2s: p1/\d\d: the word "zq[a-z]+" of version \d+ does not find it$`)},
	} {
		t.Run(c.trap, func(t *testing.T) {
			url := startAgentsBroken(t, bin, c.trap)
			out := t.TempDir()
			code, stdout, stderr := runProbe(t, context.Background(), "agents", "--target", url, "--agents", "8", "--duration", "2s",
				"--warmup", "0s", "--out", out, "--force")
			if code != c.code || !c.want.MatchString(stdout+stderr) {
				t.Fatalf("trap %q: exit %d, want %d and %s\nstdout:\n%s\nstderr:\n%s", c.trap, code, c.code, c.want, stdout, stderr)
			}
			if strings.Contains(stderr, "goroutine ") {
				t.Errorf("a stack trace:\n%s", stderr)
			}
			var rep struct {
				Checks struct {
					Versions int      `json:"versions"`
					Lost     []string `json:"lost"`
					Stale    []string `json:"stale"`
				} `json:"checks"`
			}
			b, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil || json.Unmarshal(b, &rep) != nil {
				t.Fatalf("report.json: %v %s", err, b)
			}
			bad := len(rep.Checks.Lost) + len(rep.Checks.Stale)
			if rep.Checks.Versions < 20 || (c.trap == "") != (bad == 0) {
				t.Errorf("trap %q: report.json checks %+v", c.trap, rep.Checks)
			}
		})
	}
}

// Bad input is one line and an exit code, before any load: a tool the
// server does not list (naming those it has), a version path its result
// lacks, a server that refuses initialize.
func TestAgentsBadInput(t *testing.T) {
	bin := buildAgentsBroken(t)
	url := startAgentsBroken(t, bin, "")
	dir := t.TempDir()
	file := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noTool := file("notool.json", `{"agents": {"read": {"name": "recall", "arguments": {"path": "/agents/item-{{item}}"}}}}`)
	badPath := file("badpath.json", `{"agents": {"write": {"name": "write_note", "version": "note.version",
	  "arguments": {"path": "agents/item-{{item}}.md", "markdown": "{{word}}"}}}}`)
	badInput(t, []string{"agents", "--target", url, "--file", noTool, "--duration", "1s"}, exitUsage,
		`the server lists no tool "recall" (the read tool); it has: read_note, search, write_note`)
	badInput(t, []string{"agents", "--target", url, "--file", badPath, "--duration", "1s"}, exitUsage,
		`write_note's result has no "note.version"`)
	refusing := startAgentsBroken(t, bin, "refuse")
	badInput(t, []string{"agents", "--target", refusing, "--duration", "1s"}, exitError, "MCP initialize at "+refusing+"/mcp")
	badInput(t, []string{"agents", "--call", "write=30,recall=70"}, exitUsage, `no role "recall"`)
}

// The fixture runs clean in both modes at 32 agents for 10 s: no call
// failed, no write lost, every item fresh; --projects 4 gives a table per
// project.
func TestAgentsFixtureClean(t *testing.T) {
	for _, mode := range []string{"load-time", "per-request"} {
		t.Run(mode, func(t *testing.T) {
			code, stdout, stderr := runProbe(t, context.Background(), "agents", "--fixture-mode", mode, "--agents", "32", "--duration", "10s",
				"--out", t.TempDir())
			if code != exitOK || !strings.Contains(stdout, "search index current") {
				t.Fatalf("%s: exit %d\n%s\n%s", mode, code, stdout, stderr)
			}
			for _, row := range []string{"connect", "write_note", "search", "read_note"} {
				if !regexp.MustCompile(`(?m)^` + row + ` +[1-9]\d* +\d+ .* 0$`).MatchString(stdout) {
					t.Errorf("%s: no clean %s row:\n%s", mode, row, stdout)
				}
			}
		})
	}
	t.Run("projects", func(t *testing.T) {
		code, stdout, stderr := runProbe(t, context.Background(), "agents", "--fixture-mode", "load-time", "--agents", "32", "--projects", "4",
			"--duration", "5s", "--out", t.TempDir())
		if code != exitOK {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		for _, p := range []string{"project p1", "project p2", "project p3", "project p4", "all projects"} {
			if !strings.Contains(stdout, "\n"+p+"\n") {
				t.Errorf("no table %q:\n%s", p, stdout)
			}
		}
	})
}

// Profiled, per-request mode's cost of a write is named: every reader
// waits on the write's whole re-index (the contention finding on
// (*Site).current), beside the per-request schemas.
func TestAgentsProfileNamesTheWriteCost(t *testing.T) {
	code, stdout, stderr := runProbe(t, context.Background(), "agents", "--fixture-mode", "per-request", "--agents", "16", "--duration", "6s",
		"--profile", "--wall=false", "--json", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var rep struct {
		Run struct {
			Findings []struct {
				Rule   string   `json:"rule"`
				Frames []string `json:"frames"`
			} `json:"findings"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("report.json on stdout: %v", err)
	}
	var rules []string
	held := false
	for _, f := range rep.Run.Findings {
		rules = append(rules, f.Rule)
		held = held || f.Rule == "contention" && strings.Contains(strings.Join(f.Frames, " "), "(*Site).current")
	}
	if !held || !strings.Contains(strings.Join(rules, " "), "repeated-schema") {
		t.Errorf("findings %v: want contention on (*Site).current and repeated-schema\n%s", rules, stderr)
	}
}
