package cli

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/probehq/probe/probes"
)

// microloadFlags point a named microload at the target's own endpoints
// when discovery cannot, or should not, find them.
type microloadFlags struct {
	path, queryParam, sitemap, method, param string
	feeds, bodies                            []string
}

// register adds the flags the named microload takes.
func (f *microloadFlags) register(fs *flag.FlagSet, name string) {
	repeat := func(dst *[]string) func(string) error {
		return func(s string) error { *dst = append(*dst, s); return nil }
	}
	switch name {
	case "sitemap":
		fs.StringVar(&f.path, "path", "", "the sitemap (default: robots.txt's Sitemap: lines, else /sitemap.xml; an index is followed)")
	case "page":
		fs.StringVar(&f.path, "path", "", "load this one page (default: the pages the sitemap lists)")
		fs.StringVar(&f.sitemap, "sitemap", "", "the sitemap to draw pages from (default: discovered)")
	case "feed":
		fs.Func("feed", "a feed to load, as a path or URL (repeatable; default: the RSS and Atom feeds the pages announce)", repeat(&f.feeds))
		fs.StringVar(&f.sitemap, "sitemap", "", "the sitemap whose pages are read for feed links (default: discovered)")
	case "search":
		fs.StringVar(&f.path, "path", "", "the search endpoint (default: an OpenSearch description, else a GET form with one text input)")
		fs.StringVar(&f.queryParam, "query-param", "q", "with --path: the query parameter")
		fs.StringVar(&f.sitemap, "sitemap", "", "the sitemap whose pages give the words and the search links (default: discovered)")
	case "toolslist":
		fs.StringVar(&f.path, "path", "", "the MCP endpoint (default: the first of /mcp and what /.well-known/mcp.json and the home page name that answers)")
	case "notequery":
		fs.StringVar(&f.path, "path", "", "the query endpoint (the fixture's /query when probe starts it)")
		fs.Func("body", "a query to POST, JSON by default (repeatable; each a request key)", repeat(&f.bodies))
		fs.StringVar(&f.method, "method", "POST", "POST the bodies, or GET with --param")
		fs.StringVar(&f.param, "param", "", "with --method GET: name=v1,v2,… (each value a query)")
	}
}

// flagHints say how to point each microload at its endpoint.
var flagHints = map[string]string{
	"sitemap":   "--path /sitemap.xml",
	"page":      "--path /a-page, or --sitemap /sitemap.xml",
	"feed":      "--feed /feed.xml (repeatable)",
	"search":    "--path /search --query-param q",
	"toolslist": "--path /mcp",
	"notequery": "--path /query --body '{…}' (repeatable)",
}

// needsFlag names the flag that points a microload that found nothing.
func needsFlag(name string, err error) error {
	if h, ok := flagHints[name]; ok && probes.IsNotFound(err) {
		return fmt.Errorf("%v; point it there with %s", err, h)
	}
	return err
}

// build is the named microload of these flags; fixture gives the defaults
// of the reference target (its query endpoint and note queries).
func (f *microloadFlags) build(name string, fixture bool) (probes.Microload, error) {
	switch name {
	case "toolslist":
		return &probes.ToolsList{Path: f.path}, nil
	case "sitemap":
		return &probes.Sitemap{Path: f.path}, nil
	case "page":
		return &probes.Page{Path: f.path, Sitemap: f.sitemap}, nil
	case "feed":
		var feeds []string
		for _, fd := range f.feeds {
			p, err := localPath(fd)
			if err != nil {
				return nil, usageError{"--feed " + err.Error()}
			}
			feeds = append(feeds, p)
		}
		return &probes.Feed{Feeds: feeds, Sitemap: f.sitemap}, nil
	case "search":
		return &probes.Search{Path: f.path, Param: f.queryParam, Sitemap: f.sitemap}, nil
	case "notequery":
		return f.noteQuery(fixture)
	}
	return nil, usageError{fmt.Sprintf("unknown microload %q (toolslist sitemap search notequery feed page http)", name)}
}

func (f *microloadFlags) noteQuery(fixture bool) (probes.Microload, error) {
	if f.path == "" {
		if fixture && len(f.bodies) == 0 && f.param == "" {
			return probes.NoteQuery{Path: fixtureQueryPath, Queries: fixtureNoteQueries}, nil
		}
		if len(f.bodies) > 0 || f.param != "" {
			return nil, usageError{"notequery: --body and --param need --path"}
		}
		return probes.NoteQuery{}, nil // Prepare says what is missing
	}
	if !strings.HasPrefix(f.path, "/") {
		return nil, usageError{fmt.Sprintf("--path %q must start with /", f.path)}
	}
	l := probes.NoteQuery{Path: f.path}
	switch strings.ToUpper(f.method) {
	case "GET":
		if f.param == "" {
			return nil, usageError{"notequery --method GET: give --param name=v1,v2,…"}
		}
		name, values, err := probes.ParseParam(f.param)
		if err != nil {
			return nil, usageError{"--param " + err.Error()}
		}
		for _, v := range values {
			q := url.Values{name: {v}}.Encode()
			l.Queries = append(l.Queries, probes.Query{Name: q, Key: q, Method: "GET", RawQuery: q})
		}
	case "POST":
		if len(f.bodies) == 0 {
			return nil, usageError{"notequery --path: give the queries with --body (repeatable)"}
		}
		for i, b := range f.bodies {
			l.Queries = append(l.Queries, probes.Query{Name: fmt.Sprintf("#%d", i+1), Key: b, Body: []byte(b)})
		}
	default:
		return nil, usageError{fmt.Sprintf("notequery --method %q: want POST or GET", f.method)}
	}
	return l, nil
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
		return "", errors.New(fmt.Sprintf("%q is not a path such as /feed.xml", s))
	}
	return p, nil
}

// namedMicroload is a fresh microload of that name with its defaults.
func namedMicroload(name string, fixture bool) (probes.Microload, error) {
	var f microloadFlags
	f.queryParam = "q"
	return f.build(name, fixture)
}
