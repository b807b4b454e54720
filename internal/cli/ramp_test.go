package cli

import (
	"context"
	"go/parser"
	"go/token"
	_ "net/http/pprof"
	"strconv"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
)

const workScenario = `{"scenarios": [{"name": "work", "steps": [{"name": "work", "path": "/work", "checks": {"contains": "done"}}]}]}`

func TestRampBadInput(t *testing.T) {
	probeCmd.BadInput(t, []string{"ramp"}, exitUsage, "give the arrival rates")
	probeCmd.BadInput(t, []string{"ramp", "--ramp", "500:10/5m"}, exitUsage, "the end is not above the start")
	probeCmd.BadInput(t, []string{"ramp", "--steps", "50,100,80/60s"}, exitUsage, "the rates must increase")
	probeCmd.BadInput(t, []string{"ramp", "--ramp", "10:20/5m", "--steps", "1,2/1s"}, exitUsage, "not both")
	probeCmd.BadInput(t, []string{"ramp", "--steps", "1,2/1s", "--stop-when", "soon"}, exitUsage, "--stop-when")
	// --timeout and --max-body mean what they mean in every command.
	probeCmd.BadInput(t, []string{"ramp", "--steps", "1,2/1s", "--timeout", "25h"}, exitUsage, "--timeout 25h0m0s: want more than 0 "+
		"and at most 24h0m0s")
	probeCmd.BadInput(t, []string{"ramp", "--steps", "1,2/1s", "--max-body", "100"}, exitUsage, "--max-body 100 B: want at least 1 KiB")
	file := clitest.WriteFile(t, "probe.json", `{"scenarios": [{"name": "s", "steps": [
		{"name": "login", "path": "/login", "extract": {"token": {"json": "token"}}},
		{"name": "list", "path": "/items?t={{token}}"},
		{"name": "open", "path": "/items/{{id}}"}]}]}`)
	probeCmd.BadInput(t, []string{"ramp", "--steps", "1,2/1s", "--file", file, "--target", "http://127.0.0.1:1"}, exitUsage,
		"step open uses {{id}}, which no earlier step extracts")
	for _, tc := range []struct{ src, want string }{
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a", "extract": {"x": {"xpath": "//a"}}}]}]}`,
			`scenarios[0].steps[0].extract.x: unknown key "xpath"`},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a"}]}], "mix": {"t": 1}}`, `mix.t: no scenario or microload of ` +
			`the file is named "t"`},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a", "extract": {"x": {"regexp": "("}}}]}]}`, "want a regexp"},
		{`{"scenarios": []}`, "want a list of at least one scenario"},
	} {
		f := clitest.WriteFile(t, "probe.json", tc.src)
		probeCmd.BadInput(t, []string{"ramp", "--steps", "1,2/1s", "--file", f, "--target", "http://127.0.0.1:1"}, exitUsage, tc.want)
	}
	// A name that is neither a scenario of the file nor a microload.
	good := clitest.WriteFile(t, "probe.json", workScenario)
	// An unreachable target is one line and exit 1.
	if code, _, stderr := probeCmd.Run(t, context.Background(), "ramp", "--steps", "1,2/1s", "--file", good, "--target",
		"http://127.0.0.1:1", "--out", t.TempDir()); code != exitError {
		t.Errorf("unreachable target: exit %d, want 1", code)
	} else {
		clitest.OneLine(t, stderr, "unreachable")
	}
	probeCmd.BadInput(t, []string{"ramp", "--steps", "1,2/1s", "--file", good, "--target", "http://127.0.0.1:1", "checkout"}, exitUsage,
		`"checkout" is no scenario`)
}

// probe ramp and probe scale parse flags, call the pipeline and write:
// the analysis is package pipeline's, and their files import none of the
// stages or libraries it uses (issue 20).
func TestRampAndScaleCommandsAreThin(t *testing.T) {
	fset := token.NewFileSet()
	for _, file := range []string{"experiments/ramp.go", "experiments/scale.go"} {
		f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"analyzers", "flamegraphs", "lib/stats", "lib/crash", "lib/frames"} {
				if path == module+"/"+banned {
					t.Errorf("%s imports %s: its analysis belongs in package pipeline", file, path)
				}
			}
		}
	}
}
