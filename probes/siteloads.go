package probes

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"probe/probes/h1"
)

// The microloads of web sites: a sitemap, the pages it lists, the feeds
// they announce and a search over the site's own words.

// acceptGzip is sent where a browser would send it: seed 002's client without
// it decompressed nothing and measured something else.
var acceptGzip = h1.Field{Name: "Accept-Encoding", Value: "gzip"}

func wantStatus(r *Reply, status int, ctypes ...string) error {
	if r.Status != status {
		return fmt.Errorf("status %d", r.Status)
	}
	ct := r.Header("Content-Type")
	for _, want := range ctypes {
		if strings.Contains(ct, want) {
			return nil
		}
	}
	if len(ctypes) > 0 {
		return fmt.Errorf("content type %q, want %s", ct, strings.Join(ctypes, " or "))
	}
	return nil
}

// Sitemap loads GET /sitemap.xml.
type Sitemap struct{}

func (Sitemap) Name() string { return "sitemap" }

func (Sitemap) Prepare(ctx context.Context, t *Target, c *Client) error {
	_, err := fetch(c, sitemapCall(t))
	return err
}

func (Sitemap) NewSession(ctx context.Context, c *Client, id int) (Session, error) {
	return staticSession{sitemapCall(c.target)}, nil
}

func sitemapCall(t *Target) Call {
	return Call{Op: "GET /sitemap.xml", Key: "/sitemap.xml", Req: t.Request("GET", "/sitemap.xml", nil, acceptGzip), Check: checkSitemap}
}

func checkSitemap(r *Reply) error {
	if err := wantStatus(r, 200, "xml"); err != nil {
		return err
	}
	if _, err := sitemapLocs(r.Body); err != nil {
		return err
	}
	return nil
}

// sitemapLocs parses a sitemap and returns its <loc> values.
func sitemapLocs(body []byte) ([]string, error) {
	var doc struct {
		XMLName xml.Name `xml:"urlset"`
		URLs    []struct {
			Loc string `xml:"loc"`
		} `xml:"url"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("sitemap is not XML: %v", err)
	}
	if len(doc.URLs) == 0 {
		return nil, errors.New("sitemap lists no URLs")
	}
	locs := make([]string, len(doc.URLs))
	for i, u := range doc.URLs {
		locs[i] = u.Loc
	}
	return locs, nil
}

// fetch makes one unmeasured call and returns its checked reply body.
func fetch(c *Client, call Call) ([]byte, error) {
	if err := c.conn.Do(call.Req, &c.resp); err != nil {
		return nil, err
	}
	reply, err := c.verify(call)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", call.Op, err)
	}
	return bytes.Clone(reply.Body), nil
}

// sitePaths reads the sitemap and returns the pages' paths on the target.
func sitePaths(t *Target, c *Client) ([]string, error) {
	body, err := fetch(c, sitemapCall(t))
	if err != nil {
		return nil, err
	}
	locs, err := sitemapLocs(body)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(locs))
	for _, l := range locs {
		// The sitemap names the public base URL; the pages are on the target.
		if u, err := url.Parse(l); err == nil && u.Path != "" {
			paths = append(paths, strings.TrimPrefix(u.Path, t.URL.Path))
		}
	}
	return paths, nil
}

// Page loads pages drawn from the sitemap.
type Page struct{ paths []string }

func (*Page) Name() string { return "page" }

func (p *Page) Prepare(ctx context.Context, t *Target, c *Client) error {
	var err error
	p.paths, err = sitePaths(t, c)
	return err
}

func (p *Page) NewSession(ctx context.Context, c *Client, id int) (Session, error) {
	calls := make([]Call, len(p.paths))
	for i := range calls {
		// Each client walks the pages in its own order.
		path := p.paths[(i*7919+id*104729)%len(p.paths)]
		calls[i] = Call{Op: "GET page", Key: path, Req: c.target.Request("GET", path, nil, acceptGzip), Check: checkPage}
	}
	return staticSession(calls), nil
}

func checkPage(r *Reply) error {
	if err := wantStatus(r, 200, "text/html"); err != nil {
		return err
	}
	if !bytes.Contains(r.Body, []byte("</html>")) {
		return errors.New("page is not a whole HTML document")
	}
	return nil
}

// Feed loads every RSS feed the site's pages announce, the broken one included.
type Feed struct{ paths []string }

func (*Feed) Name() string { return "feed" }

var alternateLink = regexp.MustCompile(`<link rel="alternate" type="application/rss\+xml"[^>]*href="([^"]+)"`)

func (f *Feed) Prepare(ctx context.Context, t *Target, c *Client) error {
	paths, err := sitePaths(t, c)
	if err != nil {
		return err
	}
	page, err := fetch(c, Call{Op: "GET page", Req: t.Request("GET", paths[0], nil), Check: checkPage})
	if err != nil {
		return err
	}
	for _, m := range alternateLink.FindAllSubmatch(page, -1) {
		if u, err := url.Parse(string(m[1])); err == nil {
			f.paths = append(f.paths, strings.TrimPrefix(u.Path, t.URL.Path))
		}
	}
	if len(f.paths) == 0 {
		return fmt.Errorf("page %s announces no RSS feed", paths[0])
	}
	return nil
}

func (f *Feed) NewSession(ctx context.Context, c *Client, id int) (Session, error) {
	calls := make([]Call, len(f.paths))
	for i, p := range f.paths {
		calls[(i+id)%len(calls)] = Call{Op: "GET " + p, Key: p, Req: c.target.Request("GET", p, nil, acceptGzip), Check: checkFeed}
	}
	return staticSession(calls), nil
}

func checkFeed(r *Reply) error {
	if err := wantStatus(r, 200, "rss", "xml"); err != nil {
		return err
	}
	if len(bytes.TrimSpace(r.Body)) == 0 {
		return errors.New("empty feed body") // seed 002's broken feed: an empty 200
	}
	var doc struct {
		XMLName xml.Name `xml:"rss"`
		Channel struct {
			Title string `xml:"title"`
		} `xml:"channel"`
	}
	if err := xml.Unmarshal(r.Body, &doc); err != nil {
		return fmt.Errorf("feed is not RSS: %v", err)
	}
	return nil
}

// Search loads GET /search with queries drawn from the vault's own words, a
// share of them with no hits.
type Search struct{ queries []string }

func (*Search) Name() string { return "search" }

var (
	tagRE  = regexp.MustCompile(`(?s)<[^>]*>`)
	wordRE = regexp.MustCompile(`\p{L}{4,}`)
)

func (s *Search) Prepare(ctx context.Context, t *Target, c *Client) error {
	paths, err := sitePaths(t, c)
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for i := 0; i < min(len(paths), 20); i++ {
		page, err := fetch(c, Call{Op: "GET page", Req: t.Request("GET", paths[i*len(paths)/min(len(paths), 20)], nil), Check: checkPage})
		if err != nil {
			return err
		}
		text := tagRE.ReplaceAll(page, []byte(" "))
		for _, w := range wordRE.FindAll(text, -1) {
			counts[strings.ToLower(string(w))]++
		}
	}
	s.queries = searchQueries(counts)
	if len(s.queries) == 0 {
		return errors.New("no words found on the site's pages to search for")
	}
	return nil
}

// noHitPrefix starts the queries meant to find nothing.
const noHitPrefix = "qzxv"

// searchQueries makes one- and two-word queries from the site's vocabulary,
// leaving out the most frequent words, plus one in ten with no hits.
func searchQueries(counts map[string]int) []string {
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	sortByCount(words, counts)
	words = words[min(len(words), len(words)/10):] // skip the stop words
	words = words[:min(len(words), 200)]
	var qs []string
	for i, w := range words {
		if i%3 == 2 && i+1 < len(words) {
			qs = append(qs, w+" "+words[len(words)-1-i])
		} else {
			qs = append(qs, w)
		}
		if i%9 == 8 {
			qs = append(qs, fmt.Sprintf("%s%dk", noHitPrefix, i))
		}
	}
	return qs
}

func (s *Search) NewSession(ctx context.Context, c *Client, id int) (Session, error) {
	calls := make([]Call, len(s.queries))
	for i := range calls {
		q := s.queries[(i+id*31)%len(s.queries)]
		calls[i] = Call{Op: "GET /search", Key: q, Req: c.target.Request("GET", "/search?q="+url.QueryEscape(q), nil, acceptGzip),
			Check: func(r *Reply) error { return checkSearch(r, strings.HasPrefix(q, noHitPrefix)) }}
	}
	return staticSession(calls), nil
}

func checkSearch(r *Reply, wantNone bool) error {
	if err := wantStatus(r, 200, "json"); err != nil {
		return err
	}
	var res struct {
		Total *int64 `json:"total"`
		Hits  []struct {
			Path  string   `json:"path"`
			Terms []string `json:"terms"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(r.Body, &res); err != nil || res.Total == nil {
		return fmt.Errorf("search reply is not the expected JSON")
	}
	if wantNone && *res.Total != 0 {
		return errors.New("a query of made-up words found notes")
	}
	for _, h := range res.Hits {
		if h.Path == "" || len(h.Terms) == 0 {
			return errors.New("a hit without path or matched terms")
		}
	}
	return nil
}

func sortByCount(words []string, counts map[string]int) {
	sort.Slice(words, func(i, j int) bool {
		a, b := counts[words[i]], counts[words[j]]
		return a > b || a == b && words[i] < words[j]
	})
}
