package plan

import (
	"strings"
	"testing"

	"github.com/probehq/probe/probes/agents"
)

func TestAgentsFromFile(t *testing.T) {
	p, err := Parse("probe.json", []byte(`{"agents": {"path": "/rpc", "keys": ["k1", "k2"], "projects": ["a", "b"], "terms": "cache",
	  "write": {"name": "remember", "version": "entry.version", "arguments": {"slug": "{{item}}", "text": "{{word}}", "n": 3}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Agents.Spec()
	w := s.Tool(agents.Write)
	if p.Agents.Path != "/rpc" || len(p.Agents.Keys) != 2 || w.Name != "remember" || w.Version != "entry.version" ||
		s.Tool(agents.Search).Name != "search" || strings.Join(s.Terms, ",") != "cache" || strings.Join(s.Projects, ",") != "a,b" {
		t.Errorf("spec %+v", s)
	}
	for src, want := range map[string]string{
		`{"agents": {"write": {"name": "w", "version": "v", "arguments": {"slug": "{{item}}"}}}}`:         `agents: the write tool's arguments (w) hold no {{word}}`,
		`{"agents": {"read": {"arguments": {}}}}`:                                                         `agents.read.name: want the tool's name`,
		`{"agents": {"search": {"name": "s", "match": "x", "argumnts": {}}}}`:                             `agents.search: unknown key "argumnts"`,
		`{"agents": {"path": "mcp"}}`:                                                                     `agents.path: "mcp" must start with /`,
		`{"agents": {"write": {"name": "w", "version": "a[x]", "arguments": {"p": "{{item}}{{word}}"}}}}`: `json path "a[x]"`,
	} {
		if _, err := Parse("probe.json", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", src, err, want)
		}
	}
}
