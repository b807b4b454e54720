package plan

import (
	"strings"
	"testing"

	"github.com/probehq/probe/probes/mcp"
)

// A target file's mcp entry is an MCP tool's call: the tool, its
// arguments with their holes, the endpoint and headers; a hole no param
// fills, or a param with no hole, is one line with its place.
func TestParseMCPEntry(t *testing.T) {
	p, ml := parseAndBuildFirst(t, `{"microloads": [
	  {"name": "find", "mcp": "search_notes", "arguments": "{\"query\": \"{q}\"}", "params": {"q": ["gzip", "cache"]},
	   "path": "/rpc/mcp", "headers": {"Authorization": "Bearer k"}},
	  {"mcp": "ping"}]}`)
	c, ok := ml.(*mcp.ToolsCall)
	if !ok || c.Name() != "find" || c.Tool != "search_notes" || c.Arguments != `{"query": "{q}"}` || c.Path != "/rpc/mcp" ||
		len(c.Params) != 1 || strings.Join(c.Params[0].Values, ",") != "gzip,cache" || len(c.Header) != 1 {
		t.Errorf("built %T %+v", ml, ml)
	}
	if bare, err := p.Microloads[1].Build(BuildOptions{}); err != nil || bare.Name() != "mcp" {
		t.Errorf("an unnamed mcp entry: %v %v, want one named mcp", bare, err)
	}
	for src, want := range map[string]string{
		`{"microloads": [{"mcp": "t", "arguments": "{}", "params": {"q": ["a"]}}]}`: "microloads[0].params.q: arguments " +
			"have no {q} to fill",
		`{"microloads": [{"mcp": ""}]}`:                 "microloads[0].mcp: want the tool's name",
		`{"microloads": [{"mcp": "t", "path": "mcp"}]}`: "microloads[0].path: want the MCP endpoint's path",
		`{"microloads": [{"mcp": "t", "data": "{}"}]}`:  `unknown key "data"`,
	} {
		if _, err := Parse("f.json", []byte(src)); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line saying %q", src, err, want)
		}
	}
}
