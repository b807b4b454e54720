package cli

import (
	"flag"
	"fmt"

	"github.com/probehq/probe/plan"
	"github.com/probehq/probe/probes"
)

// microloadFlags point a named microload at the target's own endpoints
// when discovery cannot, or should not, find them: the flags fill a
// plan.Microload, as a target file's entry does.
type microloadFlags struct{ plan.Microload }

// register adds the flags the named microload takes.
func (f *microloadFlags) register(fs *flag.FlagSet, name string) {
	repeat := func(dst *[]string) func(string) error {
		return func(s string) error { *dst = append(*dst, s); return nil }
	}
	switch name {
	case "sitemap":
		fs.StringVar(&f.Path, "path", "", "the sitemap (default: robots.txt's Sitemap: lines, else /sitemap.xml; an index is followed)")
	case "page":
		fs.StringVar(&f.Path, "path", "", "load this one page (default: the pages the sitemap lists)")
		fs.StringVar(&f.Sitemap, "sitemap", "", "the sitemap to draw pages from (default: discovered)")
	case "feed":
		fs.Func("feed", "a feed to load, as a path or URL (repeatable; default: the RSS and Atom feeds the pages announce)", repeat((*[]string)(&f.Feeds)))
		fs.StringVar(&f.Sitemap, "sitemap", "", "the sitemap whose pages are read for feed links (default: discovered)")
	case "search":
		fs.StringVar(&f.Path, "path", "", "the search endpoint (default: an OpenSearch description, else a GET form with one text input)")
		fs.StringVar(&f.QueryParam, "query-param", "q", "with --path: the query parameter")
		fs.StringVar(&f.Sitemap, "sitemap", "", "the sitemap whose pages give the words and the search links (default: discovered)")
	case "toolslist":
		fs.StringVar(&f.Path, "path", "", "the MCP endpoint (default: the first of /mcp and what /.well-known/mcp.json and the home page name that answers)")
	case "notequery":
		fs.StringVar(&f.Path, "path", "", "the query endpoint (the fixture's /query when probe starts it)")
		fs.Func("body", "a query to POST, JSON by default (repeatable; each a request key)", repeat((*[]string)(&f.Bodies)))
		fs.StringVar(&f.Method, "method", "POST", "POST the bodies, or GET with --param")
		fs.StringVar(&f.Param, "param", "", "with --method GET: name=v1,v2,… (each value a query)")
	}
}

// flagHints say how to point each microload at its endpoint (plan's
// table); a command name without one is no named microload.
var flagHints = func() map[string]string {
	out := map[string]string{}
	for _, k := range plan.Kinds {
		out[k.Name] = k.Hint
	}
	return out
}()

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
	m := f.Microload
	m.Name, m.Use = "", name
	return buildMicroload(&m, fixture)
}

// buildMicroload is plan's Build, whose errors are a bad command line or
// target file.
func buildMicroload(m *plan.Microload, fixture bool) (probes.Microload, error) {
	ml, err := m.Build(fixtureBuild(fixture))
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return ml, nil
}

// namedMicroload is a fresh microload of that name with its defaults.
func namedMicroload(name string, fixture bool) (probes.Microload, error) {
	ml, err := plan.Named(name, fixtureBuild(fixture))
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return ml, nil
}
