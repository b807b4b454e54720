package verify

import (
	"path/filepath"
	"testing"

	"github.com/probehq/probe/internal/testbuild"
)

// hotFrame is the frame at the line of a test server marked "// hot: mark",
// as a profile of the server would give it.
func hotFrame(t *testing.T, server, fn, mark string) Frame {
	t.Helper()
	file, line := testbuild.HotLine(t, filepath.Join("testdata", server), mark)
	return Frame{Func: "main." + fn, File: file, Line: line}
}

func TestPprofNamesMatchTheTypeCheckersFunctions(t *testing.T) {
	of := map[string]func(string) string{"pprofKey": pprofKey, "declName": declName}
	for _, tc := range []struct{ fn, name, want string }{
		{"pprofKey", "text/template.(*Template).Parse", "template.(*Template).Parse"},
		{"pprofKey", "regexp.MustCompile", "regexp.MustCompile"},
		{"pprofKey", "github.com/x/y/pkg.Map[go.shape.string,go.shape.int].F", "pkg.Map.F"},
		{"pprofKey", "github.com/x/sdk/mcp.AddTool[go.shape.map[string]interface {},go.shape.*github.com/x/y.T]", "mcp.AddTool"},
		{"declName", "main.handler.func1.2", "handler"},
		{"declName", "main.(*srv).rules", "rules"},
		{"declName", "main.handler.gowrap1", "handler"},
		{"declName", "example.com/a/b.Compile", "Compile"},
	} {
		if got := of[tc.fn](tc.name); got != tc.want {
			t.Errorf("%s(%q) = %q, want %q", tc.fn, tc.name, got, tc.want)
		}
	}
}
