package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/probes"
)

// section is a site with no sitemap and no feed at its root: its home page
// links to its sections, each page of a section announces the section's
// feed beside it, and an MCP endpoint under a prefix is announced only by
// the home page's Link header; another host's feed and a link with CR LF
// are announced too, and never followed.
func section(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `</assets/app.css>; rel="preload"; as="style", </api/v2/mcp>; rel="mcp"`)
		fmt.Fprint(w, `<html><body><a href="/blog/">Blog</a> <a href="notes/">Notes</a> <a href="https://elsewhere.example/x">x</a>`+
			`<a href="/about">About</a></body></html>`)
	})
	page := func(feed string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<html><head><link rel="alternate" type="application/rss+xml" href="%s">`+
				`<link rel="alternate" type="application/atom+xml" href="https://elsewhere.example/feed.xml">`+
				`<link rel="alternate" type="application/rss+xml" href="/x`+"\r\n"+`X-Evil: 1"></head></html>`, feed)
		}
	}
	mux.HandleFunc("/blog/", page("/blog/posts.rss.xml"))
	mux.HandleFunc("/notes/", page("changes.rss.xml"))
	mux.HandleFunc("/about", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<p>about</p>") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// Discovery looks where a person would: the home page's links and Link
// header, the pages it links to. Feeds beside their section's pages and
// an MCP endpoint under a prefix are found; another host's and a CR LF's
// are not.
func TestDiscoveryLooksWhereAPersonWould(t *testing.T) {
	srv := section(t)
	c := probes.NewClient(targetOf(t, srv), 5*time.Second)
	defer c.Close()
	f := &Feed{}
	if err := f.Prepare(context.Background(), c.Target(), c); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Paths(), " "); got != "/blog/posts.rss.xml /notes/changes.rss.xml" {
		t.Errorf("feeds %q: want the sections' feeds beside their pages", got)
	}
	mcp := MCPEndpoints(c)
	if len(mcp) == 0 || mcp[0] != "/api/v2/mcp" || mcp[len(mcp)-1] != "/mcp" {
		t.Errorf("MCP candidates %v: want the announced /api/v2/mcp first, /mcp only last", mcp)
	}
	if slices.ContainsFunc(mcp, func(p string) bool { return strings.Contains(p, "assets") }) {
		t.Errorf("a preload link taken for MCP: %v", mcp)
	}
}

// A site that announces no feed anywhere gets one line naming the pages
// read.
func TestFeedNotFoundNamesThePagesRead(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `<a href="/a">a</a>`) })
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<p>a</p>") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := probes.NewClient(targetOf(t, srv), 5*time.Second)
	defer c.Close()
	err := (&Feed{}).Prepare(context.Background(), c.Target(), c)
	if !probes.IsNotFound(err) || !strings.Contains(err.Error(), "tried /, /a") || strings.Contains(err.Error(), "\n") {
		t.Errorf("%v: want one line naming the pages read", err)
	}
}

func TestLinkHeader(t *testing.T) {
	got := linkHeader(`<https://a.example/x?y=1,2>; rel="alternate"; type="application/rss+xml" , </mcp>;rel=mcp,<bad`)
	if len(got) != 2 || got[0].href != "https://a.example/x?y=1,2" || got[0].rel != "alternate" || got[0].typ != "application/rss+xml" ||
		got[1].href != "/mcp" || got[1].rel != "mcp" {
		t.Errorf("links %+v", got)
	}
	if len(linkHeader(strings.Repeat("</x>;rel=a,", 1000))) != maxHeaderLinks {
		t.Errorf("a Link header's links are not bounded")
	}
}

// A site with no home page (Caddy serving a folder of notes) still has its
// sitemap's pages read for the feeds they announce.
func TestFeedFromTheSitemapWithoutAHomePage(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", http.NotFound)
	mux.HandleFunc("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<urlset><url><loc>http://%s/notes/1.html</loc></url></urlset>`, r.Host)
	})
	mux.HandleFunc("/notes/1.html", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<link rel="alternate" type="application/rss+xml" href="/feed.xml">`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := probes.NewClient(targetOf(t, srv), 5*time.Second)
	defer c.Close()
	f := &Feed{}
	if err := f.Prepare(context.Background(), c.Target(), c); err != nil || strings.Join(f.Paths(), " ") != "/feed.xml" {
		t.Errorf("feeds %v (%v): want the sitemap page's /feed.xml", f.Paths(), err)
	}
}
