package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// What probe fuzz mcp cannot fuzz is one line and exit 2: no --cmd, a
// tool the server does not list, an endpoint that is not MCP, a server
// with no tool, one that refuses every protocol version.
func TestFuzzMCPBadInput(t *testing.T) {
	victim := buildVictim(t, "mcp/testdata/fuzzvictim")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fuzz", "mcp"}, "--cmd"},
		{[]string{"fuzz", "mcp", "--cmd", victim, "--path", "mcp"}, `--path "mcp" must start with /`},
		{[]string{"fuzz", "mcp", "--cmd", victim, "--tool", "nope"}, "--tool nope: the server lists no such tool (it lists: count, echo)"},
		{[]string{"fuzz", "mcp", "--cmd", victim, "--path", "/elsewhere"}, "fuzz mcp: MCP initialize: "},
		{[]string{"fuzz", "mcp", "--cmd", victim + " -no-tools -stateless"}, "capabilities hold no tools"},
		{[]string{"fuzz", "mcp", "--cmd", victim + " -no-tools"}, "fuzz mcp: MCP tools/list:"},
		{[]string{"fuzz", "mcp", "--cmd", victim + " -refuse-version"}, "unsupported MCP protocol version"},
	} {
		probeCmd.BadInput(t, tc.args, exitUsage, tc.want)
	}
}

// probe fuzz mcp finds the argument that kills a tool, and the report
// names the tool and the argument, shrunk; the stateless lane's repro
// carries the routing headers, the session lane's opens a session first;
// the server's refusals are counted apart. A hundred inputs hold the n
// that kills it however busy the machine (a 3 s search on a busy one may
// not reach it).
func TestFuzzMCPNamesTheToolAndArgument(t *testing.T) {
	victim := buildVictim(t, "mcp/testdata/fuzzvictim")
	for _, tc := range []struct {
		shape string
		repro []string
	}{
		{"-stateless", []string{"-H 'Mcp-Name: count'", "-H 'Mcp-Method: tools/call'"}},
		{"-json", []string{`"method":"initialize"`, `-H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-11-25' http`}},
	} {
		code, stdout, stderr := probeCmd.Run(t, context.Background(), "fuzz", "mcp", "--cmd", victim+" "+tc.shape, "--inputs", "100", "--duration", "1m",
			"--shrink-time", "20s", "--concurrency", "2", "--json", "--out", t.TempDir())
		if code != exitError {
			t.Fatalf("%s: exit %d, want 1 (a crash found): %s", tc.shape, code, stderr)
		}
		var rep fuzzReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Crashes) != 1 {
			t.Fatalf("%s: %d crashes: %+v", tc.shape, len(rep.Crashes), rep.Crashes)
		}
		c := rep.Crashes[0]
		if c.Endpoint != "tools/call count" || c.Hole != "{int} as the argument n" || !strings.Contains(c.Input, `"n":1000001`) ||
			!strings.Contains(c.Shrink, "the argument n") {
			t.Errorf("%s: crash at %q, hole %q, input %s\nshrink %s", tc.shape, c.Endpoint, c.Hole, c.Input, c.Shrink)
		}
		for _, w := range tc.repro {
			if !strings.Contains(c.Repro, w) {
				t.Errorf("%s: repro without %s: %s", tc.shape, w, c.Repro)
			}
		}
		if rep.Microload != "fuzz mcp" || rep.Fuzz.Refused == 0 {
			t.Errorf("%s: microload %q, %d refused: %v", tc.shape, rep.Microload, rep.Fuzz.Refused, rep.Fuzz.ErrorReplies)
		}
	}
}
