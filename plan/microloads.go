package plan

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/mcp"
	"github.com/probehq/probe/probes/web"
)

// Kind is one named microload: a row of the table that the command line
// (its command, its flag hint, probe all's list) and the target file (the
// options `use:` takes) both read.
type Kind struct {
	Name    string
	Summary string   // its command's line in probe --help
	Hint    string   // the flags that point it at its endpoint when discovery finds nothing
	Options []Option // what points it at its endpoint: a file entry's keys and the command's flags
	All     int      // its place in probe all, 1 first
	Build   func(m *Microload, o BuildOptions) (probes.Microload, error)
}

// Option is one option of a named microload, as a target file's entry
// names it and as its command's flag does.
type Option struct {
	Key     string // in a file's entry (besides name and use)
	Flag    string // on the command line
	Usage   string // the flag's help
	Default string
	Repeat  bool // a list: the flag is repeatable
}

// Field is where an option's value goes in m: a string, or a list for a
// repeatable option.
func (m *Microload) Field(key string) (*string, *[]string) {
	switch key {
	case "path":
		return &m.Path, nil
	case "sitemap":
		return &m.Sitemap, nil
	case "queryParam":
		return &m.QueryParam, nil
	case "method":
		return &m.Method, nil
	case "params":
		return &m.Param, nil
	case "feeds":
		return nil, (*[]string)(&m.Feeds)
	case "bodies":
		return nil, (*[]string)(&m.Bodies)
	}
	return nil, nil
}

// BuildOptions are what Build knows of the target.
type BuildOptions struct {
	// NoteQueries are the endpoint and queries notequery loads when it is
	// given none: the reference target's, when probe started it; nil
	// otherwise.
	NoteQueries *web.NoteQuery
	// KnownNoteQueries are the queries probe knows for a note-query
	// dialect, by the profile URI a site announces it with: notequery
	// asks them of a site it was pointed at by URL whose announcement
	// names one.
	KnownNoteQueries map[string][]web.Query
}

// Kinds are the named microloads, in the order of probe --help.
var Kinds = []Kind{
	{Name: "toolslist", Summary: "load MCP tools/list: each client opens its own session, then lists the tools",
		Hint: "--path /mcp", All: 1,
		Options: []Option{{Key: "path", Flag: "path", Usage: "the MCP endpoint (default: the first of /mcp and what " +
			"/.well-known/mcp.json and the home page name that answers)"}},
		Build: func(m *Microload, _ BuildOptions) (probes.Microload, error) {
			return &mcp.ToolsList{Path: m.Path}, nil
		}},
	{Name: "sitemap", Summary: "load GET /sitemap.xml with Accept-Encoding: gzip",
		Hint: "--path /sitemap.xml", All: 2,
		Options: []Option{{Key: "path", Flag: "path", Usage: "the sitemap (default: robots.txt's Sitemap: lines, else " +
			"/sitemap.xml; an index is followed)"}},
		Build: func(m *Microload, _ BuildOptions) (probes.Microload, error) {
			return &web.Sitemap{Path: m.Path}, nil
		}},
	{Name: "search", Summary: "load the site's search with one- and two-word queries from its own pages",
		Hint: "--path /search --query-param q", All: 5,
		Options: []Option{
			{Key: "path", Flag: "path", Usage: "the search endpoint (default: an OpenSearch description, else a GET form " +
				"with one text input)"},
			{Key: "queryParam", Flag: "query-param", Usage: "with --path: the query parameter", Default: "q"},
			{Key: "sitemap", Flag: "sitemap", Usage: "the sitemap whose pages give the words and the search links (default: discovered)"},
		},
		Build: func(m *Microload, _ BuildOptions) (probes.Microload, error) {
			return &web.Search{Path: m.Path, Param: m.QueryParam, Sitemap: m.Sitemap}, nil
		}},
	{Name: "notequery", Summary: "load the note-query endpoint with a handful of realistic queries",
		Hint: "--path /query --body '{…}' (repeatable)", All: 6,
		Options: []Option{
			{Key: "path", Flag: "path", Usage: "the query endpoint (default: the one the site announces, <link " +
				"rel=\"service-desc\"> or /.well-known/note-query.json)"},
			{Key: "bodies", Flag: "body", Usage: "a query to POST, JSON by default (repeatable; each a request key)", Repeat: true},
			{Key: "method", Flag: "method", Usage: "POST the bodies, or GET with --param", Default: "POST"},
			{Key: "params", Flag: "param", Usage: "with --method GET: name=v1,v2,… (each value a query)"},
		},
		Build: buildNoteQuery},
	{Name: "feed", Summary: "load every feed the site's pages announce",
		Hint: "--feed /feed.xml (repeatable)", All: 4,
		Options: []Option{
			{Key: "feeds", Flag: "feed", Usage: "a feed to load, as a path or URL (repeatable; default: the RSS and Atom feeds " +
				"the pages announce)", Repeat: true},
			{Key: "sitemap", Flag: "sitemap", Usage: "the sitemap whose pages are read for feed links (default: discovered)"},
		},
		Build: buildFeed},
	{Name: "page", Summary: "load the pages the sitemap lists, each client in its own order",
		Hint: "--path /a-page, or --sitemap /sitemap.xml", All: 3,
		Options: []Option{
			{Key: "path", Flag: "path", Usage: "load this one page (default: the pages the sitemap lists)"},
			{Key: "sitemap", Flag: "sitemap", Usage: "the sitemap to draw pages from (default: discovered)"},
		},
		Build: func(m *Microload, _ BuildOptions) (probes.Microload, error) {
			return &web.Page{Path: m.Path, Sitemap: m.Sitemap}, nil
		}},
}

// Keys are the keys of the options.
func (k Kind) Keys() []string {
	out := make([]string, len(k.Options))
	for i, o := range k.Options {
		out[i] = o.Key
	}
	return out
}

// defaults sets the options' defaults in m.
func (k Kind) defaults(m *Microload) {
	for _, o := range k.Options {
		if s, _ := m.Field(o.Key); s != nil && o.Default != "" {
			*s = o.Default
		}
	}
}

// Lookup is the named microload's row.
func Lookup(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Names are the named microloads, in the table's order.
func Names() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = k.Name
	}
	return out
}

// All are the microloads probe all runs, in its order.
func All() []string {
	out := make([]string, len(Kinds))
	n := 0
	for _, k := range Kinds {
		if k.All > 0 && k.All <= len(out) {
			out[k.All-1] = k.Name
			n++
		}
	}
	return out[:n]
}

// Named is a fresh named microload with its defaults, as its command
// without flags would run it.
func Named(name string, o BuildOptions) (probes.Microload, error) {
	m := Microload{Use: name}
	if k, ok := Lookup(name); ok {
		k.defaults(&m)
	}
	return m.Build(o)
}

// Build is the microload probes runs for this entry: its request, or the
// named microload of its options, reported under the entry's name.
func (m *Microload) Build(o BuildOptions) (probes.Microload, error) {
	if m.request != nil {
		r := *m.request
		return &r, nil
	}
	if m.grpc {
		return m.grpcMicroload(), nil
	}
	if m.mcp {
		return m.mcpMicroload(), nil
	}
	use := m.Use
	if use == "" {
		use = m.Name
	}
	k, ok := Lookup(use)
	if !ok {
		if m.Path != "" || use == "" {
			return nil, fmt.Errorf("microload %q: a request of its own is read from a target file", m.Name)
		}
		return nil, fmt.Errorf("unknown microload %q (%s http)", use, strings.Join(Names(), " "))
	}
	ml, err := k.Build(m, o)
	if err != nil || m.Name == "" || m.Name == use {
		return ml, err
	}
	return renamed{ml, m.Name}, nil
}

// renamed is a named microload reported under the file's name for it.
type renamed struct {
	probes.Microload
	name string
}

func (r renamed) Name() string { return r.name }

func buildFeed(m *Microload, _ BuildOptions) (probes.Microload, error) {
	var feeds []string
	for _, fd := range m.Feeds {
		p, err := localPath(fd)
		if err != nil {
			return nil, errors.New("--feed " + err.Error())
		}
		feeds = append(feeds, p)
	}
	return &web.Feed{Feeds: feeds, Sitemap: m.Sitemap}, nil
}

func buildNoteQuery(m *Microload, o BuildOptions) (probes.Microload, error) {
	given := len(m.Bodies) > 0 || m.Param != ""
	if m.Path == "" && !given {
		if o.NoteQueries != nil {
			l := *o.NoteQueries
			return &l, nil
		}
		// Prepare finds the endpoint the site announces, and asks the
		// queries probe knows for its dialect, or says what is missing.
		return &web.NoteQuery{Known: o.KnownNoteQueries}, nil
	}
	if m.Path != "" && !strings.HasPrefix(m.Path, "/") {
		return nil, fmt.Errorf("--path %q must start with /", m.Path)
	}
	// Without --path, the bodies go to the endpoint the site announces.
	l := web.NoteQuery{Path: m.Path}
	switch strings.ToUpper(m.Method) {
	case "GET":
		if m.Param == "" {
			return nil, errors.New("notequery --method GET: give --param name=v1,v2,…")
		}
		name, values, err := probes.ParseParam(m.Param)
		if err != nil {
			return nil, errors.New("--param " + err.Error())
		}
		for _, v := range values {
			q := url.Values{name: {v}}.Encode()
			l.Queries = append(l.Queries, web.Query{Name: q, Key: q, Method: "GET", RawQuery: q})
		}
	case "POST":
		if len(m.Bodies) == 0 {
			return nil, errors.New("notequery --path: give the queries with --body (repeatable)")
		}
		for i, b := range m.Bodies {
			l.Queries = append(l.Queries, web.Query{Name: fmt.Sprintf("#%d", i+1), Key: b, Body: []byte(b)})
		}
	default:
		return nil, fmt.Errorf("notequery --method %q: want POST or GET", m.Method)
	}
	return &l, nil
}

// localPath reads a path or a URL as a path on the target.
func localPath(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q: %v", s, err)
	}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	if !strings.HasPrefix(p, "/") || !probes.SafePath(p) {
		return "", fmt.Errorf("%q is not a path such as /feed.xml", s)
	}
	return p, nil
}
