package plan

import (
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/mcp"
)

// mcpEntry reads an entry with an mcp key: an MCP tool's call of its own
// (tools/call over streamable HTTP, a session per client): the tool's
// name, its arguments (a JSON object whose {holes} params fill, each
// filled object a request key), the endpoint (path, default /mcp) and
// headers.
func (w walker) mcpEntry(raw map[string]any, at string) (Microload, error) {
	var m Microload
	if _, err := w.object(raw, at, "name", "mcp", "arguments", "params", "headers", "path"); err != nil {
		return m, err
	}
	var err error
	if m.MCP, err = w.str(raw, "mcp", at); err != nil {
		return m, err
	}
	if m.MCP == "" {
		return m, w.fail(at+".mcp", "want the tool's name")
	}
	if m.Arguments, err = w.str(raw, "arguments", at); err != nil {
		return m, err
	}
	if m.Path, err = w.str(raw, "path", at); err != nil {
		return m, err
	}
	if m.Path != "" && !strings.HasPrefix(m.Path, "/") {
		return m, w.fail(at+".path", "want the MCP endpoint's path, starting with /, got %q", m.Path)
	}
	if m.Params, err = w.paramsFilling(raw, at, m.Arguments, "a tool's arguments", "arguments have"); err != nil {
		return m, err
	}
	if m.Headers, m.mcpHeader, err = w.headers(raw, "headers", at); err != nil {
		return m, err
	}
	m.mcp = true
	return m, nil
}

// mcpMicroload is a fresh tools/call microload of the entry.
func (m *Microload) mcpMicroload() probes.Microload {
	return &mcp.ToolsCall{Path: m.Path, Tool: m.MCP, Arguments: m.Arguments, Params: m.Params, Header: m.mcpHeader, Label: m.Name}
}
