package plan

import (
	"strings"
	"testing"

	"github.com/probehq/probe/probes/grpc"
)

// A target file's grpc entry is probe grpc's call: its method, data,
// params, metadata and .proto files, under the entry's name.
func TestParseGRPCEntry(t *testing.T) {
	p, ml := parseAndBuildFirst(t, `{"microloads": [
	  {"name": "notes", "grpc": "probe.fixture.Notes/Search", "data": "{\"query\": \"{q}\"}",
	   "params": {"q": ["gzip", "cache"]}, "headers": {"authorization": "Bearer k"}, "proto": ["api/notes.proto"]},
	  {"grpc": "grpc.health.v1.Health/Check"}]}`)
	if ml.Name() != "notes" {
		t.Errorf("name %q, want the entry's", ml.Name())
	}
	g, ok := ml.(*grpc.GRPC)
	if !ok {
		t.Fatalf("built %T, want a *grpc.GRPC", ml)
	}
	if g.Method != "probe.fixture.Notes/Search" || g.Data != `{"query": "{q}"}` || len(g.Params) != 1 ||
		strings.Join(g.Params[0].Values, ",") != "gzip,cache" || len(g.Header) != 1 || g.Header[0].Value != "Bearer k" ||
		len(g.Proto) != 1 || g.Proto[0] != "api/notes.proto" {
		t.Errorf("built %+v", g)
	}
	bare, err := p.Microloads[1].Build(BuildOptions{})
	if err != nil || bare.Name() != "grpc" {
		t.Errorf("an unnamed grpc entry: %v %v, want one named grpc", bare, err)
	}
}

func TestParseGRPCEntryErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{"microloads": [{"grpc": "nomethod"}]}`, `microloads[0].grpc: want package.Service/Method, got "nomethod"`},
		{`{"microloads": [{"grpc": "a.B/C", "path": "/"}]}`, `microloads[0]: unknown key "path" (want name, grpc, data, ` +
			`params, headers, proto)`},
		{`{"microloads": [{"grpc": "a.B/C", "params": {"x": [1]}}]}`, "microloads[0].params.x: data has no {x} to fill"},
		{`{"microloads": [{"grpc": "a.B/C", "data": "{p}", "params": {"p": {"sitemap": true}}}]}`, "microloads[0].params.p: a " +
			"gRPC call's values are listed"},
	} {
		_, err := Parse("f.json", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n  got  %v\n  want %s", tc.src, err, tc.want)
		}
	}
}
