package cli

import (
	"flag"
	"io"
	"reflect"
	"testing"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/plan"
)

// A named microload's flags and a target file's entry fill the same
// plan.Microload: the same options build the same microload.
func TestFlagsAndFileBuildAlike(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		entry string
	}{
		{"search", []string{"--path", "/find", "--query-param", "term", "--sitemap", "/s.xml"}, `{"use": "search", "path": ` +
			`"/find", "queryParam": "term", "sitemap": "/s.xml"}`},
		{"search", nil, `{"use": "search"}`},
		{"feed", []string{"--feed", "/a.xml", "--feed", "http://x/b.xml"}, `{"use": "feed", "feeds": ["/a.xml", "http://x/b.xml"]}`},
		{"page", []string{"--sitemap", "/s.xml"}, `{"use": "page", "sitemap": "/s.xml"}`},
		{"notequery", []string{"--path", "/q", "--body", "{}", "--body", "[]"}, `{"use": "notequery", "path": "/q", ` +
			`"bodies": ["{}", "[]"]}`},
		{"notequery", []string{"--path", "/q", "--method", "GET", "--param", "tag=a,b"}, `{"use": "notequery", "path": "/q", ` +
			`"method": "GET", "params": {"tag": ["a", "b"]}}`},
		{"toolslist", []string{"--path", "/rpc"}, `{"use": "toolslist", "path": "/rpc"}`},
	} {
		fs := flag.NewFlagSet(tc.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f shared.MicroloadFlags
		f.Register(fs, tc.name)
		if err := fs.Parse(tc.flags); err != nil {
			t.Fatalf("%s %v: %v", tc.name, tc.flags, err)
		}
		fromFlags, err := f.Build(tc.name, false)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.name, tc.flags, err)
		}
		p, err := plan.Parse("f.json", []byte(`{"microloads": [`+tc.entry+`]}`))
		if err != nil {
			t.Fatal(err)
		}
		fromFile, err := shared.BuildMicroload(&p.Microloads[0], false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromFlags, fromFile) {
			t.Errorf("%s: flags %v build %#v, the file %s builds %#v", tc.name, tc.flags, fromFlags, tc.entry, fromFile)
		}
	}
}

// The command table's microload rows, the hints and probe all are plan's
// table.
func TestCommandsComeFromTheTable(t *testing.T) {
	for i, k := range plan.Kinds {
		c := commands[i]
		if c.name != k.Name || c.summary != k.Summary || shared.FlagHints[k.Name] != k.Hint {
			t.Errorf("row %d: command %q %q, table %+v", i, c.name, c.summary, k)
		}
	}
	if !reflect.DeepEqual(shared.FixtureMicroloads, plan.All()) || len(shared.FixtureMicroloads) != len(plan.Kinds) {
		t.Errorf("probe all runs %v", shared.FixtureMicroloads)
	}
}
