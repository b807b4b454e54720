package fuzzing

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/probes/fuzz"
	"github.com/probehq/probe/probes/mcp"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/fuzzreport"
	"github.com/probehq/probe/target"
)

// FuzzMCPCommand is `probe fuzz mcp`: the tools of an MCP server probe
// starts, called with arguments drawn from their input schemas.
func FuzzMCPCommand(fs *flag.FlagSet) shared.Runner {
	c := newFuzzCommand(fs, "mcp")
	fs.StringVar(&c.Cmd, "cmd", "", "command that starts the MCP server; {addr} and {port} are replaced, PORT and ADDR are set")
	fs.StringVar(&c.target, "target", "", "URL the server listens on (default: a free loopback port passed to --cmd)")
	fs.BoolVar(&c.allowRemote, "allow-remote", false, "allow a --target that is not on loopback")
	fs.StringVar(&c.mcpPath, "path", "/mcp", "the server's MCP endpoint")
	fs.Func("tool", "fuzz only this tool (repeatable; default: every tool tools/list lists)", func(s string) error {
		c.tools = append(c.tools, s)
		return nil
	})
	return c.run
}

// MCPTarget starts the server once to learn its lane and tools, and
// returns the fuzz run's templates (a tools/call per tool) and how each
// fresh process is opened (a session, in the session lane). What the
// server refuses of the protocol is a bad command line: one line, exit 2.
func (c *FuzzCommand) MCPTarget(ctx context.Context, stderr io.Writer, memLimit uint64) (fuzz.Options, fuzzreport.FuzzSetting, error) {
	fail := func(msg string) (fuzz.Options, fuzzreport.FuzzSetting, error) {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, shared.UsageError{Msg: msg}
	}
	if strings.TrimSpace(c.Cmd) == "" {
		return fail(`fuzz mcp: --cmd "SERVER COMMAND" is required: probe starts and supervises the server it fuzzes`)
	}
	if !strings.HasPrefix(c.mcpPath, "/") {
		return fail(fmt.Sprintf("--path %q must start with /", c.mcpPath))
	}
	argv, err := shared.CommandWords("cmd", c.Cmd)
	if err != nil {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, err
	}
	start, setting, err := c.serverCommand(argv, memLimit)
	if err != nil {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, err
	}
	child, err := start(ctx, io.Discard)
	if err != nil {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, err
	}
	server, err := mcp.ListToolsToFuzz(child.URL, c.mcpPath, c.load.Timeout)
	child.Kill()
	if err != nil {
		return fail("fuzz mcp: " + err.Error())
	}
	templates, skipped, err := server.FuzzTemplates(c.tools)
	if err != nil {
		return fail("fuzz mcp: " + err.Error())
	}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "probe: not fuzzing the tool %s: %s\n", s.Tool, s.Why)
	}
	fmt.Fprintf(stderr, "probe: MCP lane %s; %d tools/call templates\n", server.Lane, len(templates))
	o := fuzz.Options{Templates: templates, Start: start, Refused: mcp.FuzzRefusal, Vary: mcp.FuzzRequestID,
		Whole: mcp.FuzzReplyWhole}
	if !server.Lane.Stateless {
		setting.ReproPrelude, setting.ReproArgs = sessionRepro(setting.ReproBase+c.mcpPath, server.Lane.Version)
		// Every process gets its own session: a restarted server knows
		// none of its predecessor's, and would refuse every call after.
		o.Open = func(ctx context.Context, child *target.Child) (http.Header, error) {
			return server.OpenSession(child.URL, c.load.Timeout)
		}
	}
	return o, setting, nil
}

// sessionRepro is the shell that opens a session before a reproduction
// (its id in $SID, read from initialize's reply header) and the curl words
// that send the session's header with it.
func sessionRepro(url, version string) (string, []string) {
	initialize, initialized := mcp.SessionOpening()
	curl := "curl -sS -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'"
	prelude := fmt.Sprintf("SID=$(%s -D - -o /dev/null --data-binary %s %s | tr -d '\\r' | sed -n 's/^[Mm][Cc][Pp]-[Ss]ession-[Ii]d: *//p'); "+
		"%s -o /dev/null -H \"Mcp-Session-Id: $SID\" -H %s --data-binary %s %s",
		curl, report.ShellQuote(string(initialize)), report.ShellQuote(url),
		curl, report.ShellQuote("MCP-Protocol-Version: "+version), report.ShellQuote(string(initialized)), report.ShellQuote(url))
	return prelude, []string{`-H "Mcp-Session-Id: $SID"`, "-H " + report.ShellQuote("MCP-Protocol-Version: "+version)}
}
