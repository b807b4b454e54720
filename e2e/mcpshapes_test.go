package e2e

import (
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/testbuild"
)

// The official SDK's four shapes of e2e/testdata/mcptools (sessions or
// stateless, each answering JSON or event streams), loaded by probe
// toolslist and by a target file's mcp: entry with no error; the report
// says the lane and the protocol version measured: the stateless server
// in the 2026-07-28 lane (server/discover, no session), the session
// server in the session lane (issue 38).
func TestToolsListEveryMCPShape(t *testing.T) {
	server := testbuild.Program(t, "./testdata/mcptools")
	file := clitest.WriteFile(t, "mcp.json", `{"microloads": [
		{"name": "summary", "mcp": "catalog_summary", "arguments": "{\"client\": \"ann\"}"}]}`)
	for _, tc := range []struct {
		name          string
		flags         []string
		lane, version string
	}{
		{"sessions-sse", nil, "session", "2025-11-25"},
		{"sessions-json", []string{"-json"}, "session", "2025-11-25"},
		{"stateless-sse", []string{"-stateless"}, "stateless", "2026-07-28"},
		{"stateless-json", []string{"-stateless", "-json"}, "stateless", "2026-07-28"},
	} {
		t.Run(tc.name,
			func(t *testing.T) {
				addr, pprofAddr := freeAddr(t), freeAddr(t)
				startProcess(t, server, append([]string{"-addr", addr, "-pprof", pprofAddr}, tc.flags...)...)
				waitAnswers(t, "http://"+pprofAddr+"/debug/pprof/")
				for _, args := range [][]string{{"toolslist", "--path", "/mcp"}, {"summary", "--file", file}} {
					code, rep, stderr := runJSON(t, append(args, "--target", "http://"+addr)...)
					if code != exitOK || rep.Latency.Requests == 0 || rep.Latency.Errors != 0 {
						t.Errorf("%s: exit %d, %d requests, %d errors %v\n%s", args[0], code, rep.Latency.Requests,
							rep.Latency.Errors, rep.Errors, stderr)
					}
					if rep.MCP == nil || rep.MCP.Lane != tc.lane || rep.MCP.ProtocolVersion != tc.version {
						t.Errorf("%s: report's mcp %+v, want the %s lane, %s", args[0], rep.MCP, tc.lane, tc.version)
					}
				}
			})
	}
}
