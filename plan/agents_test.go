package plan

import (
	"strings"
	"testing"

	"github.com/probehq/probe/probes/agents"
	"github.com/probehq/probe/result"
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

// A file may leave out the versions (the words are read back) and name a
// create tool, called once per item before the load.
func TestAgentsReadBackFromFile(t *testing.T) {
	p, err := Parse("probe.json", []byte(`{"agents": {
	  "create": {"name": "create_entities", "arguments": {"entities": [{"name": "{{item}}", "entityType": "t"}]}},
	  "write": {"name": "add_observations", "arguments": {"observations": [{"entityName": "{{item}}", "contents": ["{{word}}"]}]}},
	  "read": {"name": "open_nodes", "arguments": {"names": ["{{item}}"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Agents.Spec()
	if c := s.Tool(agents.Create); c == nil || c.Name != "create_entities" || s.Mode() != result.AgentReadBack {
		t.Errorf("spec %+v", s)
	}
	_, err = Parse("probe.json", []byte(`{"agents": {"create": {"name": "c", "arguments": {"n": "x"}}}}`))
	if err == nil || !strings.Contains(err.Error(), `the create tool ("c") needs a name and {{item}}`) {
		t.Errorf("err %v", err)
	}
}
