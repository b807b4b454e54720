package e2e

import (
	"strings"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/testbuild"
)

// The experiment in MCP's own terms (issue 35): on testdata/mcptools, an
// MCP server on the official Go SDK as it ships (streamable HTTP, a
// session per client), one tool call each, loaded from a target file. The
// variants vary the call's arguments: the control adds an argument of
// probe's own, other-value sends the arguments with other values. The
// catalogue built on every call whatever the arguments is load-time (or
// says why not); the catalogue of the region an argument names, the same
// work for every region and another reply for each, is never load-time;
// the strict tool refuses the control with isError, and the variant is
// void with its errors shown, never counted.
func TestExperimentMCPArguments(t *testing.T) {
	probe := testbuild.Program(t, "../cmd/probe")
	server := testbuild.Program(t, "./testdata/mcptools")
	addr := freeAddr(t)
	pprofAddr := freeAddr(t)
	startProcess(t, server, "-addr", addr, "-pprof", pprofAddr)
	waitAnswers(t, "http://"+pprofAddr+"/debug/pprof/")
	file := clitest.WriteFile(t, "mcp.json", `{"microloads": [
		{"name": "summary", "mcp": "catalog_summary", "arguments": "{\"client\": \"ann\"}"},
		{"name": "region", "mcp": "catalog_for", "arguments": "{\"region\": \"eu\"}"},
		{"name": "strict", "mcp": "catalog_strict", "arguments": "{\"client\": \"ann\"}"}]}`)
	for _, tc := range []struct {
		name, frame string
		trap        bool
	}{{"summary", "buildCatalogue", false}, {"region", "buildRegionCatalogue", true}, {"strict", "buildStrictCatalogue", false}} {
		t.Run(tc.name, func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				rep := experimentRun(t, probe, tc.name, "--file", file, "--target", "http://"+addr,
					"--pprof", "http://"+pprofAddr+"/debug/pprof/")
				e := rep.Experiment
				for _, v := range e.Variants {
					if strings.Contains(v.Request, "?") {
						t.Errorf("variant %s sent a query string on an MCP call: %s", v.Name, v.Request)
					}
				}
				ignored := variantOf(e, "ignored-field")
				if ignored == nil || strings.Join(ignored.Varies, ",") != "arguments.probe-experiment" {
					t.Fatalf("ignored-field: %+v, want an argument of probe's own", ignored)
				}
				if tc.name == "strict" {
					if ignored.Errors == 0 || !strings.Contains(ignored.Error, "void") || !strings.Contains(ignored.Error, "isError") ||
						!strings.Contains(ignored.Error, "probe-experiment") {
						t.Errorf("ignored-field on the strict tool: %d errors, %q: want void with the tool's refusal shown", ignored.Errors, ignored.Error)
					}
				} else if ignored.Error != "" || !ignored.SameReply {
					t.Errorf("ignored-field on a lenient tool: %+v, want the same reply", ignored)
				}
				other := variantOf(e, "other-value")
				if other == nil || other.Error != "" || len(other.Varies) != 1 || !strings.HasPrefix(other.Varies[0], "arguments.") {
					t.Fatalf("other-value: %+v, want the argument sent with another value", other)
				}
				if other.SameReply == tc.trap {
					t.Errorf("other-value got the same reply %v on %s", other.SameReply, tc.name)
				}
				for _, f := range rep.Findings {
					if tc.trap && f.Class == "load-time" {
						t.Fatalf("%s on work keyed on an argument was called load-time: %s", f.Rule, f.Evidence)
					}
				}
				judged := judgedOn(t, e, tc.frame, tc.frame)
				if tc.name == "strict" && strings.Contains(judged.Why, "ignored-field 1") {
					t.Errorf("the void variant's figures were given as evidence: %s", judged.Why)
				}
				if retryUntold(t, judged, attempt) {
					continue
				}
				switch {
				case tc.trap && couldNotTell(judged):
					t.Logf("the trap, never load-time, could not be told on this machine: %s", judged.Why)
				case tc.trap && (judged.Verdict != "replies-with-input" || !strings.Contains(judged.Why, "`arguments.region`")):
					t.Errorf("verdict %s, want replies-with-input naming `arguments.region`: %s", judged.Verdict, judged.Why)
				case !tc.trap && judged.Verdict != "input-independent" && !strings.Contains(judged.Why, "arguments."):
					t.Errorf("verdict %s on load-time work, and it does not say which argument kept it: %s", judged.Verdict, judged.Why)
				}
				return
			}
		})
	}
}
