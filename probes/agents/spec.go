// Package agents is probe agents' load: many MCP agents at once, each with
// its own session (initialize, notifications/initialized, then a loop) and
// its own key, calling a server's write, search and read tools by weight,
// and then the checks the seed's load test made: no call failed, no write
// was lost (the versions of the contended items add up to the
// acknowledged writes, or, on a server whose writes carry no version,
// every acknowledged write's word is read back) and the search finds
// every item's last word.
// The sessions are the official MCP Go SDK's client.
package agents

import (
	"fmt"
	"slices"
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
)

// The roles a tool plays in the load.
const (
	Write  = "write"
	Search = "search"
	Read   = "read"
)

// Roles are the roles, in the report's order.
var Roles = []string{Write, Search, Read}

// Create is the role of an optional tool called once per item before the
// load, unmeasured: a server whose write only adds to an item that exists
// (a knowledge graph's add_observations after create_entities).
const Create = "create"

// Tool is how the load calls one of the server's tools. Its arguments'
// strings may hold holes: {{item}} (one of the contended items of a
// project), {{word}} (the unique word probe makes for each write),
// {{term}} (one of Spec.Terms; the freshness check searches a word
// instead), {{project}}.
type Tool struct {
	Role string
	Name string
	Args map[string]any
	// Version is a JSON path into the result (its structured content, or
	// the JSON of its first text) to the item's version as an integer:
	// a write's acknowledged version, a read's current one.
	Version string
	// Match (search) is what a search result holds when the item is among
	// its hits; it may hold {{item}} and {{project}}.
	Match string
}

// Spec is what the load needs of a server: its three tools, the search
// terms and the projects' names ({{project}}).
type Spec struct {
	Tools    []Tool
	Terms    []string
	Projects []string // nil: p1, p2, … for --projects
}

// Mode is how the checks tell a lost write: by the versions of the
// writes and of the read (both given), else by reading the words back.
func (s Spec) Mode() string {
	if s.Tool(Write).Version != "" && s.Tool(Read).Version != "" {
		return result.AgentByVersion
	}
	return result.AgentReadBack
}

// Tool is the spec's tool of role, or nil.
func (s Spec) Tool(role string) *Tool {
	for i := range s.Tools {
		if s.Tools[i].Role == role {
			return &s.Tools[i]
		}
	}
	return nil
}

// FixtureSpec is the reference target's: write_note, search and
// read_note, a project argument on each, the version in the write's and
// the read's result.
func FixtureSpec() Spec {
	return Spec{
		Tools: []Tool{
			{Role: Write, Name: "write_note", Version: "version", Args: map[string]any{
				"project": "{{project}}", "path": "agents/item-{{item}}.md",
				"markdown": "---\ntitle: Agent item {{item}}\ntags: [agents]\n---\nContended item {{item}} of {{project}}, " +
					"written by an agent: {{word}}.\n"}},
			{Role: Search, Name: "search", Match: `"/agents/item-{{item}}"`, Args: map[string]any{
				"project": "{{project}}", "query": "{{term}}"}},
			{Role: Read, Name: "read_note", Version: "version", Args: map[string]any{
				"project": "{{project}}", "path": "/agents/item-{{item}}"}},
		},
		Terms: []string{"cache", "index", "latency", "snapshot", "compression", "histogram", "replica", "lantern"},
	}
}

// Check says what is wrong with the spec, or nil.
func (s Spec) Check() error {
	for _, r := range Roles {
		t := s.Tool(r)
		if t == nil {
			return fmt.Errorf("no %s tool", r)
		}
		if t.Name == "" {
			return fmt.Errorf("the %s tool has no name", r)
		}
		if _, err := probes.ParseJSONPath(t.Version); err != nil {
			return fmt.Errorf("the %s tool's version: %v", r, err)
		}
	}
	if c := s.Tool(Create); c != nil && (c.Name == "" || !holds(c.Args, "{{item}}")) {
		return fmt.Errorf("the create tool (%q) needs a name and {{item}} in its arguments", c.Name)
	}
	if s.Tool(Search).Match == "" {
		return fmt.Errorf("the search tool (%s) needs a match: what its result holds when the item is a hit, e.g. \"/notes/{{item}}\"",
			s.Tool(Search).Name)
	}
	if !holds(s.Tool(Write).Args, "{{word}}") {
		return fmt.Errorf("the write tool's arguments (%s) hold no {{word}}: a write must carry its unique word for the freshness check",
			s.Tool(Write).Name)
	}
	if !holds(s.Tool(Search).Args, "{{term}}") {
		return fmt.Errorf("the search tool's arguments (%s) hold no {{term}}", s.Tool(Search).Name)
	}
	for _, r := range []string{Write, Read} {
		if !holds(s.Tool(r).Args, "{{item}}") {
			return fmt.Errorf("the %s tool's arguments (%s) hold no {{item}}", r, s.Tool(r).Name)
		}
	}
	if len(s.Terms) == 0 {
		return fmt.Errorf("no search terms")
	}
	return nil
}

// holds says whether a string of v holds hole.
func holds(v any, hole string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, hole)
	case map[string]any:
		for _, e := range x {
			if holds(e, hole) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(x, func(e any) bool { return holds(e, hole) })
	}
	return false
}

// fill is v with its holes filled (a new value; v is not changed).
func fill(v any, r *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		return r.Replace(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = fill(e, r)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fill(e, r)
		}
		return out
	}
	return v
}

// holes is the replacer of one call's holes.
func holes(item, word, term, project string) *strings.Replacer {
	return strings.NewReplacer("{{item}}", item, "{{word}}", word, "{{term}}", term, "{{project}}", project)
}

// Weights are the shares of the roles' calls (--call write=30,search=47,read=23).
type Weights map[string]int

// DefaultWeights are the seed's: 30 % writes, the rest 2 : 1 searches to reads.
var DefaultWeights = Weights{Write: 30, Search: 47, Read: 23}

// ParseWeights reads write=30,search=47,read=23; a role left out is not called.
func ParseWeights(s string) (Weights, error) {
	w := Weights{}
	for _, part := range strings.Split(s, ",") {
		role, n, ok := strings.Cut(strings.TrimSpace(part), "=")
		var v int
		if _, err := fmt.Sscanf(n, "%d", &v); !ok || err != nil || v < 0 || v > 1000000 || fmt.Sprint(v) != n {
			return nil, fmt.Errorf("%q: want role=weight, like write=30,search=47,read=23", part)
		}
		if !slices.Contains(Roles, role) {
			return nil, fmt.Errorf("%q: no role %q (want write, search, read)", part, role)
		}
		if _, dup := w[role]; dup {
			return nil, fmt.Errorf("%q: %s given twice", s, role)
		}
		w[role] = v
	}
	if w[Write]+w[Search]+w[Read] == 0 {
		return nil, fmt.Errorf("%q: the weights add up to 0", s)
	}
	return w, nil
}

// String is the weights as --call takes them.
func (w Weights) String() string {
	var parts []string
	for _, r := range Roles {
		if v, ok := w[r]; ok {
			parts = append(parts, fmt.Sprintf("%s=%d", r, v))
		}
	}
	return strings.Join(parts, ",")
}
