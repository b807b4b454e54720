package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/mcp"
	"github.com/probehq/probe/probes/web"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/target"
)

// initCommand is `probe init --target URL`: discovery, written down as a
// target file for the user to edit and run (probe all --file).
func initCommand(fs *flag.FlagSet) shared.Runner {
	var target shared.TargetFlags
	fs.StringVar(&target.Target, "target", "", "URL of the server to describe")
	fs.StringVar(&target.Key, "key", "", "send Authorization: Bearer KEY while discovering")
	out := fs.String("out", "probe.jsonnet", "the target file to write")
	force := fs.Bool("force", false, "overwrite --out when it exists")
	timeout := fs.Duration("timeout", 30*time.Second, "longest wait for one reply")
	return func(ctx context.Context, s shared.Streams, words []string) error {
		if err := shared.NoWords("init", words); err != nil {
			return err
		}
		if target.Target == "" {
			return shared.UsageError{Msg: "init: --target URL is required: the server to describe"}
		}
		u, err := shared.ParseTarget(target.Target)
		if err != nil {
			return err
		}
		if _, err := os.Stat(*out); err == nil && !*force {
			return shared.UsageError{Msg: fmt.Sprintf("init: %s exists; --force overwrites it, --out names another file", *out)}
		}
		t := &probes.Target{URL: u, Header: target.Header()}
		src, found := describe(ctx, t, *timeout)
		if found == 0 {
			fmt.Fprintf(s.Stderr, "probe: %s announces nothing probe knows; %s holds commented examples to fill in\n", u, *out)
		}
		if err := report.WriteFileAtomic(*out, []byte(src)); err != nil {
			return err
		}
		fmt.Fprintf(s.Stdout, "%s: %d microloads found on %s; run them with: probe all --file %s\n", *out, found, u, *out)
		return nil
	}
}

// describe discovers what t announces and writes it as a commented target
// file; found counts the microloads it could fill in.
func describe(ctx context.Context, t *probes.Target, timeout time.Duration) (string, int) {
	var b strings.Builder
	found := 0
	fmt.Fprintf(&b, "// The microloads of %s, as `probe init` found them on %s.\n", t.URL, time.Now().UTC().Format("2006-01-02"))
	b.WriteString("// Edit freely: `probe all --file FILE` runs every one, `probe NAME --file FILE`\n")
	b.WriteString("// one of them. The format is in probe's docs/DESIGN.md (\"The target file\").\n{\n")
	fmt.Fprintf(&b, "  target: %s,\n", quote(t.URL.String()))
	// Only the profiles' check: the process Open looks for is not written down.
	if target.Open(ctx, target.Spec{URL: t.URL, Pprof: t.URL.JoinPath("/debug/pprof/")}).Pprof != nil {
		fmt.Fprintf(&b, "  pprof: %s,  // the profiles --profile reads\n", quote(t.URL.JoinPath("/debug/pprof/").String()))
	} else {
		b.WriteString("  // pprof: 'http://127.0.0.1:6060/debug/pprof/',  // no /debug/pprof/ on the target: say where " +
			"it is for --profile\n")
	}
	b.WriteString("  // headers: { Authorization: 'Bearer …' },  // sent with every request\n  microloads: [\n")
	entry := func(comment, line string, ok bool) {
		fmt.Fprintf(&b, "    // %s\n", comment)
		if ok {
			fmt.Fprintf(&b, "    %s,\n", line)
			found++
		} else {
			fmt.Fprintf(&b, "    // %s,\n", line)
		}
	}
	sm := &web.Sitemap{}
	err := probes.Prepare(ctx, sm, t, timeout)
	if err == nil {
		entry(fmt.Sprintf("the sitemap (%s)", strings.Join(sm.Sitemaps(), ", ")), fmt.Sprintf("{ name: 'sitemap', use: "+
			"'sitemap', path: %s }", quote(sm.Sitemaps()[0])), true)
	} else {
		entry(err.Error(), "{ name: 'sitemap', use: 'sitemap', path: '/sitemap.xml' }", false)
	}
	pg := &web.Page{}
	if err := probes.Prepare(ctx, pg, t, timeout); err == nil {
		entry(fmt.Sprintf("the %d pages the sitemap lists", len(pg.Pages())), "{ name: 'page', use: 'page' }", true)
	} else {
		entry("page: "+err.Error(), "{ name: 'page', use: 'page', path: '/' }", false)
	}
	fd := &web.Feed{}
	if err := probes.Prepare(ctx, fd, t, timeout); err == nil {
		entry("the feeds the pages announce", fmt.Sprintf("{ name: 'feed', use: 'feed', feeds: [%s] }", quoteAll(fd.Paths())), true)
	} else {
		entry(err.Error(), "{ name: 'feed', use: 'feed', feeds: ['/feed.xml'] }", false)
	}
	se := &web.Search{}
	if err := probes.Prepare(ctx, se, t, timeout); err == nil {
		path, param := se.Endpoint()
		entry("the search the pages announce",
			fmt.Sprintf("{ name: 'search', use: 'search', path: %s, queryParam: %s }", quote(path), quote(param)), true)
	} else {
		entry(err.Error(), "{ name: 'search', use: 'search', path: '/search', queryParam: 'q' }", false)
	}
	tl := &mcp.ToolsList{}
	if err := probes.Prepare(ctx, tl, t, timeout); err == nil {
		entry("MCP tools/list", fmt.Sprintf("{ name: 'toolslist', use: 'toolslist', path: %s }", quote(tl.Endpoint())), true)
	} else {
		entry(err.Error(), "{ name: 'toolslist', use: 'toolslist', path: '/mcp' }", false)
	}
	b.WriteString(`    // A query endpoint, if the server has one: each body a query.
    // { name: 'query', use: 'notequery', path: '/query', bodies: ['{"q": "gzip"}', '{"q": "cache"}'] },
    // Any request, its values varied and its reply checked:
    // { name: 'notes', path: '{page}', params: { page: { sitemap: '/notes/' } },
    //   checks: { status: 200, contentType: 'text/html', contains: ['</html>'], notContains: ['panic'] } },
    // { name: 'items', path: '/api/items', params: { page: { range: [1, 20] }, sort: ['date', 'title'] },
    //   checks: { status: 200, json: 'items[0].id' } },
    // { name: 'query', method: 'POST', path: '/api/query', headers: { 'Content-Type': 'application/json' },
    //   body: '{"q": "gzip"}', checks: { status: [200, 204] } },
  ],
}
`)
	return b.String(), found
}

// quote is a Jsonnet string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}
