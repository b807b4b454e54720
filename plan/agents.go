package plan

import "github.com/probehq/probe/probes/agents"

// Agents is what probe agents calls on an MCP server: its write, search
// and read tools with their arguments' holes ({{item}} {{word}} {{term}}
// {{project}}), the search terms, the projects and the agents' keys.
type Agents struct {
	Path     string     `json:"path,omitempty" jsonschema:"the MCP endpoint (default /mcp; --path overrides it)"`
	Keys     Values     `json:"keys,omitempty" jsonschema:"bearer tokens: agent i takes key i (cycling); --key-file overrides them"`
	Write    *AgentTool `json:"write,omitempty" jsonschema:"the tool that writes a contended item; its arguments hold {{item}} and {{word}}, its version the JSON path of the write's version (none: the words written are read back)"`
	Search   *AgentTool `json:"search,omitempty" jsonschema:"the tool that searches; its arguments hold {{term}}, its match what a result holds when the item is a hit"`
	Read     *AgentTool `json:"read,omitempty" jsonschema:"the tool that reads an item; its arguments hold {{item}}, its version the JSON path of the item's current version (none: the words written are read back)"`
	Create   *AgentTool `json:"create,omitempty" jsonschema:"a tool called once per item before the load (e.g. create_entities, when the write adds to an item that must exist); its arguments hold {{item}}"`
	Terms    Values     `json:"terms,omitempty" jsonschema:"the search terms, {{term}}"`
	Projects Values     `json:"projects,omitempty" jsonschema:"the projects' names, {{project}} (default p1, p2, …)"`
}

// AgentTool is one tool as probe agents calls it.
type AgentTool struct {
	Name      string         `json:"name" jsonschema:"the tool's name, as tools/list gives it"`
	Arguments map[string]any `json:"arguments,omitempty" jsonschema:"the call's arguments; strings may hold {{item}} {{word}} {{term}} {{project}}"`
	Version   string         `json:"version,omitempty" jsonschema:"write, read: a JSON path into the result to the item's version (an integer), e.g. version or note.version"`
	Match     string         `json:"match,omitempty" jsonschema:"search: what the result holds when the item is among the hits; may hold {{item}} {{project}}"`
}

// Spec is the agents' spec: the file's tools, the fixture's default for
// the ones it leaves out (create: none).
func (a *Agents) Spec() agents.Spec {
	s := agents.FixtureSpec()
	if a == nil {
		return s
	}
	for role, t := range map[string]*AgentTool{agents.Write: a.Write, agents.Search: a.Search, agents.Read: a.Read} {
		if t != nil {
			*s.Tool(role) = agents.Tool{Role: role, Name: t.Name, Args: t.Arguments, Version: t.Version, Match: t.Match}
		}
	}
	if a.Create != nil {
		s.Tools = append(s.Tools, agents.Tool{Role: agents.Create, Name: a.Create.Name, Args: a.Create.Arguments})
	}
	if len(a.Terms) > 0 {
		s.Terms = a.Terms
	}
	s.Projects = a.Projects
	return s
}

func (w walker) agents(v any, at string) (*Agents, error) {
	m, err := w.object(v, at, "path", "keys", "write", "search", "read", "create", "terms", "projects")
	if err != nil {
		return nil, err
	}
	a := &Agents{}
	if a.Path, err = w.str(m, "path", at); err != nil {
		return nil, err
	}
	if a.Path != "" && a.Path[0] != '/' {
		return nil, w.fail(join(at, "path"), "%q must start with /", a.Path)
	}
	for _, f := range []struct {
		key string
		to  *Values
	}{{"keys", &a.Keys}, {"terms", &a.Terms}, {"projects", &a.Projects}} {
		if _, ok := m[f.key]; ok {
			vs, err := w.strs(m, f.key, at)
			if err != nil {
				return nil, err
			}
			*f.to = vs
		}
	}
	for _, f := range []struct {
		key string
		to  **AgentTool
	}{{"write", &a.Write}, {"search", &a.Search}, {"read", &a.Read}, {"create", &a.Create}} {
		tv, ok := m[f.key]
		if !ok {
			continue
		}
		tat := join(at, f.key)
		tm, err := w.object(tv, tat, "name", "arguments", "version", "match")
		if err != nil {
			return nil, err
		}
		t := &AgentTool{}
		if t.Name, err = w.str(tm, "name", tat); err != nil {
			return nil, err
		}
		if t.Name == "" {
			return nil, w.fail(join(tat, "name"), "want the tool's name")
		}
		if t.Version, err = w.str(tm, "version", tat); err != nil {
			return nil, err
		}
		if t.Match, err = w.str(tm, "match", tat); err != nil {
			return nil, err
		}
		if args, ok := tm["arguments"]; ok {
			if t.Arguments, ok = args.(map[string]any); !ok {
				return nil, w.fail(join(tat, "arguments"), "want an object, got %s", kindOf(args))
			}
		}
		*f.to = t
	}
	if err := a.Spec().Check(); err != nil {
		return nil, w.fail(at, "%v", err)
	}
	return a, nil
}
