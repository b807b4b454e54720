package web

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/probehq/probe/probes"
)

// The microloads of web sites: a sitemap, the pages it lists and the feeds
// they announce. Each finds its endpoint the way a crawler would (robots.txt,
// sitemap indexes, <link rel="alternate">), or takes it from its options.

// fetch makes one unmeasured call and returns its checked reply body.
func fetch(c *probes.Client, call probes.Call) ([]byte, error) {
	reply, err := c.Unmeasured(call)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", call.Op, err)
	}
	return bytes.Clone(reply.Body), nil
}

// siteMap is what a site's sitemaps say: the sitemap documents (an index
// and its children) and the pages they list, as paths on the target.
type siteMap struct {
	site     *site
	sitemaps []string
	pages    []string
}

// readSitemaps finds the sitemaps (path given, else robots.txt's, else
// /sitemap.xml), follows an index to its children and lists the pages.
func readSitemaps(c *probes.Client, path string) (*siteMap, error) {
	s := &siteMap{site: newSite(c.Target())}
	var tried []string
	queue := []string{path}
	if path == "" {
		queue = nil
		status, body, err := c.Get("/robots.txt")
		if err != nil {
			return nil, err // the target does not answer: nothing to discover
		}
		tried = append(tried, fmt.Sprintf("/robots.txt (%s)", statusText(status, err)))
		if err == nil && status == 200 {
			for _, ref := range robotsSitemaps(body) {
				s.site.adopt(ref)
				if p, ok := s.site.localPath(ref, c.Target().URL.String()+"/robots.txt"); ok {
					queue = append(queue, p)
				}
			}
		}
		if len(queue) == 0 {
			queue = []string{"/sitemap.xml"}
		}
	}
	for len(queue) > 0 && len(s.sitemaps) <= maxChildSitemaps && len(s.pages) < maxSitemapURLs {
		p := queue[0]
		queue = queue[1:]
		if slices.Contains(s.sitemaps, p) {
			continue
		}
		status, body, err := c.Get(p)
		if err != nil && len(s.sitemaps) == 0 && len(tried) == 0 {
			return nil, err
		}
		if err != nil || status != 200 {
			tried = append(tried, fmt.Sprintf("%s (%s)", p, statusText(status, err)))
			continue
		}
		locs, index, err := parseSitemap(body)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", p, err))
			continue
		}
		s.sitemaps = append(s.sitemaps, p)
		// The protocol puts a sitemap's URLs on one host: a sitemap the
		// target serves names the target's public host (it may sit behind
		// a proxy, or run here under 127.0.0.1). Locations spread over
		// several hosts are not taken on trust; only the target's own
		// are followed. Only paths are ever requested, on the target.
		if h, ok := oneHost(locs); ok {
			s.site.adopt(h)
		}
		for _, l := range locs {
			if index {
				s.site.adopt(l) // the sitemaps the site names are its own
			}
			lp, ok := s.site.localPath(l, c.Target().URL.String()+p)
			switch {
			case !ok:
			case index:
				queue = append(queue, lp)
			case len(s.pages) < maxSitemapURLs:
				s.pages = append(s.pages, lp)
			}
		}
	}
	if len(s.sitemaps) == 0 {
		return nil, &probes.NotFound{Microload: "sitemap", What: "no sitemap", Tried: tried}
	}
	if len(s.pages) == 0 {
		return nil, &probes.NotFound{Microload: "sitemap", What: "the sitemaps list no page on this site", Tried: s.sitemaps}
	}
	return s, nil
}

func statusText(status int, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("status %d", status)
}

// spread picks up to n of paths, spread over them.
func spread(paths []string, n int) []string {
	if len(paths) <= n {
		return paths
	}
	out := make([]string, n)
	for i := range out {
		out[i] = paths[i*len(paths)/n]
	}
	return out
}

// Sitemap loads the site's sitemaps: the one named, or those robots.txt
// names (or /sitemap.xml), an index's children included.
type Sitemap struct {
	Path     string // the sitemap; empty: discover it
	sitemaps []string
}

func (*Sitemap) Name() string { return "sitemap" }

func (m *Sitemap) Prepare(ctx context.Context, t *probes.Target, c *probes.Client) error {
	s, err := readSitemaps(c, m.Path)
	if err != nil {
		return err
	}
	m.sitemaps = s.sitemaps
	return nil
}

func (m *Sitemap) NewSession(ctx context.Context, c *probes.Client, id int) (probes.Session, error) {
	return rotatedGets(c, m.sitemaps, id, checkSitemap), nil
}

// rotatedGets is a session that GETs each path once, client id starting
// id places along so that the clients do not all ask for the same one.
func rotatedGets(c *probes.Client, paths []string, id int, check func(*probes.Reply) error) probes.Session {
	calls := make([]probes.Call, len(paths))
	for i, p := range paths {
		calls[(i+id)%len(calls)] = probes.Call{Op: "GET " + p, Key: p, Req: c.Target().Request("GET", p, nil), Check: check}
	}
	return probes.StaticSession(calls)
}

func checkSitemap(r *probes.Reply) error {
	if err := probes.WantStatus(r, 200, "xml"); err != nil {
		return err
	}
	_, _, err := parseSitemap(r.Body)
	return err
}

// Page loads pages drawn from the sitemap, each client in its own order,
// or the one page named.
type Page struct {
	Path    string // one page; empty: the sitemap's
	Sitemap string // the sitemap to draw from; empty: discover it
	paths   []string
}

func (*Page) Name() string { return "page" }

func (p *Page) Prepare(ctx context.Context, t *probes.Target, c *probes.Client) error {
	if p.Path != "" {
		p.paths = []string{p.Path}
		_, err := fetch(c, pageCall(t, p.Path))
		return err
	}
	s, err := readSitemaps(c, p.Sitemap)
	if err != nil {
		return probes.Reframe(err, "page")
	}
	p.paths = s.pages
	return nil
}

func (p *Page) NewSession(ctx context.Context, c *probes.Client, id int) (probes.Session, error) {
	calls := make([]probes.Call, len(p.paths))
	for i := range calls {
		path := p.paths[(i*7919+id*104729)%len(p.paths)]
		calls[i] = pageCall(c.Target(), path)
	}
	return probes.StaticSession(calls), nil
}

func pageCall(t *probes.Target, path string) probes.Call {
	return probes.Call{Op: "GET page", Key: path, Req: t.Request("GET", path, nil), Check: checkPage}
}

func checkPage(r *probes.Reply) error {
	if err := probes.WantStatus(r, 200, "text/html"); err != nil {
		return err
	}
	if !bytes.Contains(bytes.ToLower(r.Body), []byte("</html>")) {
		return errors.New("page is not a whole HTML document")
	}
	return nil
}

// Feed loads every RSS and Atom feed the site's pages announce (<link
// rel="alternate">, on the home page and pages drawn from the sitemap), the
// broken ones included, and the feeds named.
type Feed struct {
	Feeds   []string // feeds named; they are loaded whether announced or not
	Sitemap string
	paths   []string
}

func (*Feed) Name() string { return "feed" }

func (f *Feed) Prepare(ctx context.Context, t *probes.Target, c *probes.Client) error {
	f.paths = append([]string(nil), f.Feeds...)
	if len(f.paths) > 0 {
		return nil
	}
	// Feeds sit beside their pages (/blog/posts.rss.xml): every page a
	// person would look at is read for the feeds it announces.
	links, read := lookAround(c, f.Sitemap)
	for _, l := range links {
		if strings.Contains(" "+l.rel+" ", " alternate ") && (strings.Contains(l.typ, "rss+xml") || strings.Contains(l.typ, "atom+xml")) &&
			!slices.Contains(f.paths, l.path) {
			f.paths = append(f.paths, l.path)
		}
	}
	if len(f.paths) == 0 {
		return &probes.NotFound{Microload: "feed", What: "no <link rel=\"alternate\"> or Link header to an RSS or Atom feed on the " +
			"pages read", Tried: read}
	}
	return nil
}

func (f *Feed) NewSession(ctx context.Context, c *probes.Client, id int) (probes.Session, error) {
	return rotatedGets(c, f.paths, id, checkFeed), nil
}

func checkFeed(r *probes.Reply) error {
	if err := probes.WantStatus(r, 200, "rss", "atom", "xml"); err != nil {
		return err
	}
	if len(bytes.TrimSpace(r.Body)) == 0 {
		return errors.New("empty feed body") // seed 002's broken feed: an empty 200
	}
	var doc struct{ XMLName xml.Name }
	if err := xml.Unmarshal(r.Body, &doc); err != nil {
		return fmt.Errorf("feed is not XML: %v", err)
	}
	if doc.XMLName.Local != "rss" && doc.XMLName.Local != "feed" && doc.XMLName.Local != "RDF" {
		return fmt.Errorf("feed's root is <%s>, not <rss> or <feed>", doc.XMLName.Local)
	}
	return nil
}

// Sitemaps are the sitemap documents Prepare found.
func (m *Sitemap) Sitemaps() []string { return m.sitemaps }

// Pages are the pages Prepare found.
func (p *Page) Pages() []string { return p.paths }

// Feeds are the feeds Prepare found or was given.
func (f *Feed) Paths() []string { return f.paths }

// SitemapPages are the pages the site's sitemaps list, as paths on the
// target (probes.HTTP's SitemapPages, for a parameter drawn from them).
func SitemapPages(c *probes.Client) ([]string, error) {
	s, err := readSitemaps(c, "")
	if err != nil {
		return nil, err
	}
	return s.pages, nil
}
