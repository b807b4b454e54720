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
	for name, want := range map[string]string{
		"text/template.(*Template).Parse":                        "template.(*Template).Parse",
		"regexp.MustCompile":                                     "regexp.MustCompile",
		"github.com/x/y/pkg.Map[go.shape.string,go.shape.int].F": "pkg.Map.F",
		"github.com/x/sdk/mcp.AddTool[go.shape.map[string]interface {},go.shape.*github.com/x/y.T]": "mcp.AddTool",
	} {
		if got := pprofKey(name); got != want {
			t.Errorf("pprofKey(%q) = %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string]string{
		"main.handler.func1.2":    "handler",
		"main.(*srv).rules":       "rules",
		"main.handler.gowrap1":    "handler",
		"example.com/a/b.Compile": "Compile",
	} {
		if got := declName(name); got != want {
			t.Errorf("declName(%q) = %q, want %q", name, got, want)
		}
	}
}
