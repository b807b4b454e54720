package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/probehq/probe/probes"

	"golang.org/x/net/html"
)

// Discovery: the conventions by which a web site announces its shape —
// robots.txt names its sitemaps, a sitemap index names sitemaps, pages link
// their feeds and their search — read so that a microload finds its
// endpoint on a server nobody described to probe.

// Limits of discovery: what a site announces is read, not trusted.
const (
	maxChildSitemaps = 10
	maxSitemapURLs   = 50_000
	pagesForLinks    = 20 // pages read for feed and search links
)

// link is an HTML <link> element.
type link struct{ rel, typ, href string }

// form is an HTML <form> and its named inputs.
type form struct {
	method, action string
	inputs         []formInput
}

type formInput struct{ typ, name string }

// htmlPage is what discovery reads of a page: its <link> elements, its
// forms and the targets of its <a href> links, each in order.
type htmlPage struct {
	links   []link
	forms   []form
	anchors []string
}

// parseHTML reads a page's <link> elements, forms and links in one pass.
func parseHTML(body []byte) htmlPage {
	z := html.NewTokenizer(bytes.NewReader(body))
	var pg htmlPage
	var cur *form
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return pg
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken && tt != html.EndTagToken {
			continue
		}
		t := z.Token()
		attr := func(name string) string {
			for _, a := range t.Attr {
				if strings.EqualFold(a.Key, name) {
					return a.Val
				}
			}
			return ""
		}
		switch {
		case t.Data == "form" && tt == html.EndTagToken:
			if cur != nil {
				pg.forms = append(pg.forms, *cur)
				cur = nil
			}
		case t.Data == "form":
			cur = &form{method: strings.ToLower(attr("method")), action: attr("action")}
		case t.Data == "input" && cur != nil:
			cur.inputs = append(cur.inputs, formInput{typ: strings.ToLower(attr("type")), name: attr("name")})
		case t.Data == "link":
			pg.links = append(pg.links, link{rel: strings.ToLower(attr("rel")), typ: strings.ToLower(attr("type")), href: attr("href")})
		case t.Data == "a" && tt != html.EndTagToken && attr("href") != "":
			pg.anchors = append(pg.anchors, attr("href"))
		}
	}
}

// linkHeader reads the links of an HTTP Link header's value (RFC 8288):
// `<href>; rel="alternate"; type="application/rss+xml", <…>; rel=mcp`.
// What it cannot read is skipped.
func linkHeader(v string) []link {
	var out []link
	for len(out) < maxHeaderLinks {
		start := strings.IndexByte(v, '<')
		end := strings.IndexByte(v, '>')
		if start < 0 || end < start {
			return out
		}
		l := link{href: v[start+1 : end]}
		v = v[end+1:]
		params := v
		if next := strings.IndexByte(v, '<'); next >= 0 {
			params, v = v[:next], v[next:]
		} else {
			v = ""
		}
		for _, p := range strings.Split(params, ";") {
			k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			val = strings.ToLower(strings.Trim(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(val), ",")), `"`))
			switch k = strings.ToLower(strings.TrimSpace(k)); {
			case !ok:
			case k == "rel":
				l.rel = val
			case k == "type":
				l.typ = val
			}
		}
		out = append(out, l)
	}
	return out
}

// maxHeaderLinks bounds the links read of one page's Link headers.
const maxHeaderLinks = 64

// announced is a link a page announced (a <link> element or a Link
// header), as a path on the target.
type announced struct {
	link
	path string
}

// lookAround reads what a person would look at to find a site's feeds and
// services: the home page (its <link> elements and Link headers), the pages
// it links to on the same site, and pages of the sitemap at sitemap ("" for
// robots.txt's or /sitemap.xml), at most pagesForLinks beyond the home
// page. It returns the links they announce, each once, and the pages read.
func lookAround(c *probes.Client, sitemap string) (links []announced, read []string) {
	t := c.Target()
	st := newSite(t)
	pages := []string{"/"}
	if s, err := readSitemaps(c, sitemap); err == nil {
		st = s.site
		for _, p := range spread(s.pages, pagesForLinks) {
			if !slices.Contains(pages, p) {
				pages = append(pages, p)
			}
		}
	}
	seen := map[string]bool{}
	for i := 0; i < len(pages) && len(read) <= pagesForLinks; i++ {
		page := pages[i]
		reply, err := c.Unmeasured(probes.Call{Op: "GET " + page, Req: t.Request("GET", page, nil),
			Check: func(*probes.Reply) error { return nil }})
		if err != nil || reply.Status != 200 {
			continue
		}
		read = append(read, page)
		base := t.URL.String() + page
		var found []link
		if reply.Header != nil {
			found = append(found, linkHeader(reply.Header("Link"))...)
		}
		pg := parseHTML(reply.Body)
		found = append(found, pg.links...)
		for _, l := range found {
			if p, ok := st.localPath(l.href, base); ok && !seen[l.rel+" "+l.typ+" "+p] {
				seen[l.rel+" "+l.typ+" "+p] = true
				links = append(links, announced{link: l, path: p})
			}
		}
		if i == 0 { // the home page's own links come before the sitemap's pages
			var linked []string
			for _, ref := range pg.anchors {
				if p, ok := st.localPath(ref, base); ok && !slices.Contains(pages, p) && !slices.Contains(linked, p) &&
					len(linked) < pagesForLinks {
					linked = append(linked, p)
				}
			}
			pages = slices.Insert(pages, 1, linked...)
		}
	}
	return links, read
}

// robotsSitemaps are the Sitemap: lines of a robots.txt.
func robotsSitemaps(body []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), "sitemap") {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// parseSitemap reads a sitemap (urlset) or a sitemap index.
func parseSitemap(body []byte) (locs []string, index bool, err error) {
	var doc struct {
		XMLName xml.Name
		URLs    []struct {
			Loc string `xml:"loc"`
		} `xml:"url"`
		Sitemaps []struct {
			Loc string `xml:"loc"`
		} `xml:"sitemap"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return nil, false, fmt.Errorf("sitemap is not XML: %v", err)
	}
	switch doc.XMLName.Local {
	case "urlset":
		for _, u := range doc.URLs {
			locs = append(locs, strings.TrimSpace(u.Loc))
		}
	case "sitemapindex":
		index = true
		for _, s := range doc.Sitemaps {
			locs = append(locs, strings.TrimSpace(s.Loc))
		}
	default:
		return nil, false, fmt.Errorf("sitemap's root is <%s>, not <urlset> or <sitemapindex>", doc.XMLName.Local)
	}
	if len(locs) == 0 {
		return nil, index, errors.New("sitemap lists no URLs")
	}
	return locs, index, nil
}

// site knows which hosts are the site's own: the target's, and those its
// sitemaps name (the public base URL the site is served under). A link to
// any other host is not followed.
type site struct {
	t     *probes.Target
	hosts map[string]bool
}

func newSite(t *probes.Target) *site {
	return &site{t: t, hosts: map[string]bool{strings.ToLower(t.URL.Host): true}}
}

// adopt takes the host of a URL the site itself named (in robots.txt or a
// sitemap) as the site's.
func (s *site) adopt(ref string) {
	if u, err := url.Parse(ref); err == nil && u.Host != "" {
		s.hosts[strings.ToLower(u.Host)] = true
	}
}

// oneHost is the scheme and host all of refs name, when they name one.
func oneHost(refs []string) (string, bool) {
	host := ""
	for _, ref := range refs {
		u, err := url.Parse(strings.TrimSpace(ref))
		if err != nil || u.Host == "" {
			return "", false
		}
		h := strings.ToLower(u.Host)
		if host != "" && h != host {
			return "", false
		}
		host = h
	}
	return "//" + host, host != ""
}

// localPath is ref, resolved against the page at base, as a request
// target on the target: escaped, the target's base path prefixed, and
// refused when it is another host's or holds control characters (a
// hostile sitemap could otherwise put CR LF into probe's requests).
func (s *site) localPath(ref, base string) (string, bool) {
	b, err := url.Parse(base)
	if err != nil {
		return "", false
	}
	u, err := b.Parse(strings.TrimSpace(ref))
	if err != nil || u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" {
		return "", false
	}
	if u.Host != "" && !s.hosts[strings.ToLower(u.Host)] {
		return "", false
	}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	// The site names its public URLs; the pages are on the target, which
	// may serve them under its own base path.
	p = strings.TrimPrefix(p, s.t.URL.Path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if !probes.SafePath(p) {
		return "", false
	}
	return p, true
}

// openSearchURL reads an OpenSearch description and returns the search's
// URL template for JSON or HTML replies, JSON preferred.
func openSearchURL(body []byte) (string, error) {
	var doc struct {
		URLs []struct {
			Type     string `xml:"type,attr"`
			Template string `xml:"template,attr"`
			Method   string `xml:"method,attr"`
		} `xml:"Url"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("OpenSearch description is not XML: %v", err)
	}
	best := ""
	for _, u := range doc.URLs {
		if !strings.Contains(u.Template, "{searchTerms}") || u.Method != "" && !strings.EqualFold(u.Method, "get") {
			continue
		}
		switch {
		case strings.Contains(u.Type, "json"):
			return u.Template, nil
		case strings.Contains(u.Type, "html") && best == "":
			best = u.Template
		}
	}
	if best == "" {
		return "", errors.New("the OpenSearch description has no GET URL template for HTML or JSON")
	}
	return best, nil
}

// searchForm finds a GET form with exactly one text input: its action and
// the input's name.
func searchForm(forms []form) (action, param string, ok bool) {
	for _, f := range forms {
		if f.method != "" && f.method != "get" {
			continue
		}
		var text []string
		for _, in := range f.inputs {
			switch in.typ {
			case "", "text", "search":
				if in.name != "" {
					text = append(text, in.name)
				}
			}
		}
		if len(text) == 1 {
			return f.action, text[0], true
		}
	}
	return "", "", false
}

// MCPEndpoints are the paths where an MCP server may answer, in the
// order a client tries them: what the site announces — what
// /.well-known/mcp.json (or /.well-known/mcp) names, a <link rel="mcp">
// or a Link header of rel mcp on the home page, the pages it links to or
// the sitemap's — then /mcp, the path most servers take when nothing
// announces one.
func MCPEndpoints(c *probes.Client) []string {
	t := c.Target()
	st := newSite(t)
	var candidates []string
	add := func(p string) {
		if !slices.Contains(candidates, p) {
			candidates = append(candidates, p)
		}
	}
	for _, wk := range []string{"/.well-known/mcp.json", "/.well-known/mcp"} {
		if status, body, err := c.Get(wk); err == nil && status == 200 {
			if p, ok := st.localPath(wellKnownMCP(body), t.URL.String()+wk); ok && wellKnownMCP(body) != "" {
				add(p)
			}
		}
	}
	links, _ := lookAround(c, "")
	for _, l := range links {
		if len(candidates) < maxMCPAnnounced && (strings.Contains(" "+l.rel+" ", " mcp ") || strings.Contains(l.typ, "mcp")) {
			add(l.path)
		}
	}
	add("/mcp")
	return candidates
}

// maxMCPAnnounced bounds the MCP endpoints tried of those a site announces:
// a site that names a hundred is not asked a hundred times.
const maxMCPAnnounced = 16

// wellKnownMCP reads an MCP server description (/.well-known/mcp.json):
// the endpoint it names, at the top or under "transport" or "server".
func wellKnownMCP(body []byte) string {
	var doc map[string]any
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	pick := func(m map[string]any) string {
		for _, k := range []string{"endpoint", "url", "mcpEndpoint", "mcp_endpoint"} {
			if s, ok := m[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	if s := pick(doc); s != "" {
		return s
	}
	for _, k := range []string{"transport", "server", "remote"} {
		if m, ok := doc[k].(map[string]any); ok {
			if s := pick(m); s != "" {
				return s
			}
		}
	}
	return ""
}

// Limits of the note-query announcement: what is read of the home page for
// its links, of the description, and of the path it names.
const (
	maxAnnouncingPage    = 1 << 20
	maxNoteQueryDesc     = 64 << 10
	maxAnnouncedPathSize = 1024
)

// WellKnownNoteQuery is where a site keeps its note-query description when
// its pages do not link it (RFC 8615).
const WellKnownNoteQuery = "/.well-known/note-query.json"

// noteQueryAnnounced is what a site says of its note-query endpoint.
type noteQueryAnnounced struct {
	path    string // on the target, checked
	profile string // the dialect of its queries, as the site names it
}

// discoverNoteQuery follows what the site announces: the home page's
// <link rel="service-desc" type="application/json"> (RFC 8631), else the
// well-known description, whose "endpoint" is the query endpoint and whose
// "profile" names the dialect. Every reference must be a path on the
// target's own origin; anything else is refused, not followed.
func discoverNoteQuery(c *probes.Client) (noteQueryAnnounced, error) {
	t := c.Target()
	var tried []string
	desc := ""
	status, body, err := c.Get("/")
	if err != nil {
		return noteQueryAnnounced{}, err // the target does not answer: nothing to discover
	}
	if status == 200 {
		links := parseHTML(body[:min(len(body), maxAnnouncingPage)]).links
		for _, lk := range links {
			if !strings.Contains(" "+lk.rel+" ", " service-desc ") || !strings.Contains(lk.typ, "json") {
				continue
			}
			p, err := sameOriginPath(t, "/", lk.href)
			if err != nil {
				return noteQueryAnnounced{}, refused("the home page's service-desc link", err)
			}
			desc = p
			break
		}
	}
	if desc == "" {
		tried = append(tried, fmt.Sprintf("/ (%s)", statusText(status, nil)+", no service-desc link"))
		desc = WellKnownNoteQuery
	}
	notFound := func(why string) error {
		tried = append(tried, desc+" ("+why+")")
		return &probes.NotFound{Microload: "notequery", What: "no query endpoint is known for this server", Tried: tried}
	}
	status, body, err = c.Get(desc)
	switch {
	case err == nil && status == 404 && len(tried) > 0:
		// Nothing announced at all: the plain answer, which names the flags.
		return noteQueryAnnounced{}, &probes.NotFound{Microload: "notequery", What: "no query endpoint is known for this server"}
	case err != nil:
		return noteQueryAnnounced{}, notFound(err.Error())
	case status != 200:
		return noteQueryAnnounced{}, notFound(statusText(status, nil))
	case len(body) > maxNoteQueryDesc:
		return noteQueryAnnounced{}, notFound(fmt.Sprintf("%d bytes, more than a description's %d", len(body), maxNoteQueryDesc))
	}
	var doc struct {
		Endpoint string `json:"endpoint"`
		Profile  string `json:"profile"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return noteQueryAnnounced{}, notFound("not JSON")
	}
	if doc.Endpoint == "" {
		return noteQueryAnnounced{}, notFound(`no "endpoint"`)
	}
	p, err := sameOriginPath(t, desc, doc.Endpoint)
	if err != nil {
		return noteQueryAnnounced{}, refused(desc+"'s endpoint", err)
	}
	return noteQueryAnnounced{path: p, profile: doc.Profile}, nil
}

// refused says what a site announced and why probe does not follow it.
func refused(what string, err error) error {
	return &probes.NotFound{Microload: "notequery", What: what + " is refused: " + err.Error()}
}

// sameOriginPath is ref, as a page at path base on the target names it, as
// a path on the target: a reference of the target's own scheme and host, no
// user, query, dot segments, control characters or backslashes. Nothing of
// ref reaches a request line unless it passes; what the error quotes of it
// is bounded and escaped.
func sameOriginPath(t *probes.Target, base, ref string) (string, error) {
	q := probes.QuoteBounded(ref)
	if len(ref) > maxAnnouncedPathSize {
		return "", fmt.Errorf("%s is longer than %d bytes", q, maxAnnouncedPathSize)
	}
	if strings.ContainsFunc(ref, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "", fmt.Errorf("%s holds control characters or backslashes", q)
	}
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("%s is not a URL", q)
	}
	if u.Opaque != "" || u.User != nil || u.Host != "" && !strings.EqualFold(u.Host, t.URL.Host) ||
		u.Scheme != "" && !strings.EqualFold(u.Scheme, t.URL.Scheme) {
		return "", fmt.Errorf("%s is not on this server (%s)", q, t.URL.Scheme+"://"+t.URL.Host)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return "", fmt.Errorf("%s is not a path only", q)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == ".." || seg == "." {
			return "", fmt.Errorf("%s has dot segments", q)
		}
	}
	if u.Path == "" {
		return "", fmt.Errorf("%s names no path", q)
	}
	page := &url.URL{Scheme: t.URL.Scheme, Host: t.URL.Host, Path: strings.TrimSuffix(t.URL.Path, "/") + base}
	p := page.ResolveReference(&url.URL{Path: u.Path}).EscapedPath()
	// References name the site's public paths; the target may serve them
	// under its own base path, which every request prefixes.
	p = strings.TrimPrefix(p, strings.TrimSuffix(t.URL.Path, "/"))
	if !strings.HasPrefix(p, "/") || !probes.SafePath(p) {
		return "", fmt.Errorf("%s is not a path such as /query", q)
	}
	return p, nil
}
