package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
)

// Search loads a site's search with one- and two-word queries from the
// site's own words, one in ten made up to find nothing. The search is the
// one named (Path, Param), or the one the pages announce: an OpenSearch
// description (<link rel="search">), else a GET form with one text input.
// Replies are checked whether JSON or HTML: a made-up word must find
// nothing (its reply holds it no more often than a reply echoes its query),
// and, before the load, some real words must be found.
type Search struct {
	Path    string // the search endpoint; empty: discover it
	Param   string // its query parameter (default q)
	Sitemap string

	endpoint string // path with the query parameter last, its value to append
	queries  []string
	echo     int // how often a reply holds a query it did not find (the echo)
}

func (*Search) Name() string { return "search" }

var (
	tagRE  = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`)
	wordRE = regexp.MustCompile(`\p{L}{4,}`)
)

// noHitPrefix starts the queries meant to find nothing.
const noHitPrefix = "qzxv"

func (s *Search) Prepare(ctx context.Context, t *probes.Target, c *probes.Client) error {
	pages := []string{"/"}
	st := newSite(t)
	if sm, err := readSitemaps(c, s.Sitemap); err == nil {
		pages = append(pages, spread(sm.pages, pagesForLinks)...)
		st = sm.site
	}
	counts := map[string]int64{}
	var endpoint string
	var tried []string
	for _, page := range pages {
		status, body, err := c.Get(page)
		if err != nil || status != 200 {
			continue
		}
		text := tagRE.ReplaceAll(body, []byte(" "))
		for _, w := range wordRE.FindAll(text, -1) {
			counts[strings.ToLower(string(w))]++
		}
		if endpoint == "" && s.Path == "" {
			endpoint, tried = discoverSearch(c, st, page, body, tried)
		}
	}
	switch {
	case s.Path != "":
		param := s.Param
		if param == "" {
			param = "q"
		}
		if !strings.HasPrefix(s.Path, "/") {
			return fmt.Errorf("search path %q must start with /", s.Path)
		}
		endpoint = withParam(s.Path, param)
	case endpoint == "":
		return &probes.NotFound{Microload: "search", What: fmt.Sprintf("no OpenSearch description and no GET form with one text input "+
			"on the %d pages read", len(pages)), Tried: tried}
	}
	s.endpoint = endpoint
	s.queries = searchQueries(counts)
	if len(s.queries) == 0 {
		return errors.New("search: no words found on the site's pages to search for")
	}
	// What a reply that finds nothing looks like: how often it echoes the
	// query (in a search box, a heading, a JSON field).
	none := noHitPrefix + "zzq"
	status, body, err := c.Get(s.endpoint + url.QueryEscape(none))
	if err != nil {
		return err
	}
	if status != 200 {
		return fmt.Errorf("search %s answers status %d", strings.TrimSuffix(s.endpoint, "="), status)
	}
	s.echo = bytes.Count(bytes.ToLower(body), []byte(none))
	// And one that finds something: some word of the site's own pages must
	// be found, or this is not the site's search.
	var asked []string
	for _, q := range s.queries {
		if strings.HasPrefix(q, noHitPrefix) || strings.Contains(q, " ") {
			continue
		}
		if len(asked) == 8 {
			break
		}
		asked = append(asked, q)
		if status, body, err := c.Get(s.endpoint + url.QueryEscape(q)); err == nil && status == 200 &&
			bytes.Count(bytes.ToLower(body), []byte(q)) > s.echo {
			return nil
		}
	}
	return fmt.Errorf("search %s found none of %d words of the site's own pages (%s): is it the site's search?",
		strings.TrimSuffix(s.endpoint, "="), len(asked), strings.Join(asked, ", "))
}

// discoverSearch reads a page for its search: an OpenSearch description,
// else a GET form with one text input. It returns the endpoint (a path
// ending in "param=") or "".
func discoverSearch(c *probes.Client, st *site, page string, body []byte, tried []string) (string, []string) {
	pg := parseHTML(body)
	links, forms := pg.links, pg.forms
	base := c.Target().URL.String() + page
	for _, l := range links {
		if !strings.Contains(" "+l.rel+" ", " search ") || !strings.Contains(l.typ, "opensearchdescription") {
			continue
		}
		p, ok := st.localPath(l.href, base)
		if !ok {
			continue
		}
		status, desc, err := c.Get(p)
		tried = append(tried, fmt.Sprintf("OpenSearch %s (%s)", p, statusText(status, err)))
		if err != nil || status != 200 {
			continue
		}
		tmpl, err := openSearchURL(desc)
		if err != nil {
			continue
		}
		if ep := templateEndpoint(st, tmpl, base); ep != "" {
			return ep, tried
		}
	}
	if action, param, ok := searchForm(forms); ok {
		if action == "" {
			action = page
		}
		if p, ok := st.localPath(action, base); ok {
			return withParam(p, param), tried
		}
	}
	return "", tried
}

// templateEndpoint turns an OpenSearch template
// (https://site/search?q={searchTerms}&lang=en) into an endpoint whose
// search terms go last.
func templateEndpoint(st *site, tmpl, base string) string {
	u, err := url.Parse(strings.ReplaceAll(tmpl, "{searchTerms}", "SEARCHTERMS"))
	if err != nil {
		return ""
	}
	q := u.Query()
	param := ""
	for k, vs := range q {
		for _, v := range vs {
			if v == "SEARCHTERMS" {
				param = k
			}
		}
	}
	if param == "" {
		return ""
	}
	q.Del(param)
	for k, vs := range q { // optional parameters ({count?}) are left out
		if len(vs) > 0 && strings.HasPrefix(vs[0], "{") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	p, ok := st.localPath(u.String(), base)
	if !ok {
		return ""
	}
	return withParam(p, param)
}

// withParam is path with param last in its query, ready for a value.
func withParam(path, param string) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + url.QueryEscape(param) + "="
}

// searchQueries makes one- and two-word queries from the site's vocabulary,
// leaving out the most frequent words, plus one in ten with no hits.
func searchQueries(counts map[string]int64) []string {
	words := result.ByCount(counts)
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

func (s *Search) NewSession(ctx context.Context, c *probes.Client, id int) (probes.Session, error) {
	calls := make([]probes.Call, len(s.queries))
	op := "GET " + strings.SplitN(s.endpoint, "?", 2)[0]
	for i := range calls {
		q := s.queries[(i+id*31)%len(s.queries)]
		calls[i] = probes.Call{Op: op, Key: q, Req: c.Target().Request("GET", s.endpoint+url.QueryEscape(q), nil),
			Check: func(r *probes.Reply) error { return s.check(r, q) }}
	}
	return probes.StaticSession(calls), nil
}

// check: a JSON reply with a total says how many it found; any reply
// holds a word it found more often than it echoes a query.
func (s *Search) check(r *probes.Reply, q string) error {
	if r.Status != 200 {
		return fmt.Errorf("status %d", r.Status)
	}
	wantNone := strings.HasPrefix(q, noHitPrefix)
	if strings.Contains(r.Header("Content-Type"), "json") {
		var res struct {
			Total *int64 `json:"total"`
		}
		if err := json.Unmarshal(r.Body, &res); err != nil {
			return fmt.Errorf("search reply is not JSON: %v", err)
		}
		if res.Total != nil {
			if wantNone && *res.Total != 0 {
				return errors.New("a query of made-up words found something")
			}
			return nil
		}
	}
	// A real word may rightly find nothing (not every word of a page is
	// indexed); Prepare made sure some are found. A made-up one must not be.
	if wantNone && bytes.Count(bytes.ToLower(r.Body), []byte(strings.ToLower(strings.Fields(q)[0]))) > s.echo {
		return errors.New("a query of made-up words found something")
	}
	return nil
}

// Endpoint is the search Prepare found: its path (with any fixed query)
// and its query parameter.
func (s *Search) Endpoint() (path, param string) {
	i := strings.LastIndexAny(s.endpoint, "?&")
	if i < 0 {
		return s.endpoint, ""
	}
	p, _ := url.QueryUnescape(strings.TrimSuffix(s.endpoint[i+1:], "="))
	return s.endpoint[:i], p
}
