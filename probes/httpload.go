package probes

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/probehq/probe/lib/h1"
)

// HTTP loads any endpoint of any server: one request, or a family of them
// when its path holds {name} holes and Params give their values (the rest
// of the Params go into the query). Each filled request is a request key
// for reply digests.
type HTTP struct {
	Label  string // the microload's name in reports; default "http"
	Method string
	Path   string // path and query; {name} is filled from Params
	Params []Param
	Header []h1.Field
	Body   []byte
	Check  func(*Reply) error // nil: a status below 400
	// Param and Values are --param name=v1,v2,…: one query parameter.
	Param  string
	Values []string
	// SitemapPages lists the site's pages for a FromSitemap parameter
	// (probes/web's SitemapPages).
	SitemapPages func(c *Client) ([]string, error)

	paths []string
}

// Param gives the values of one hole of the path or one query parameter.
type Param struct {
	Name   string
	Values []string
	// FromSitemap draws the values from the pages the sitemap lists (their
	// paths, with this prefix when it is set); such a value is a whole path,
	// not escaped again.
	FromSitemap bool
	Prefix      string
}

// maxRequestKeys bounds the requests a family expands to.
const maxRequestKeys = 10_000

// ParseParam reads a varied parameter: name=v1,v2,….
func ParseParam(s string) (name string, values []string, err error) {
	name, list, ok := strings.Cut(s, "=")
	if !ok || name == "" || list == "" {
		return "", nil, fmt.Errorf("%q: want name=v1,v2,…", s)
	}
	return name, strings.Split(list, ","), nil
}

// ParseHeader reads a header line "Name: value".
func ParseHeader(s string) (h1.Field, error) {
	k, v, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\r\n") || strings.ContainsAny(v, "\r\n") {
		return h1.Field{}, fmt.Errorf("%q: want Name:value", s)
	}
	return h1.Field{Name: k, Value: strings.TrimSpace(v)}, nil
}

func (l *HTTP) Name() string {
	if l.Label != "" {
		return l.Label
	}
	return "http"
}

var hole = regexp.MustCompile(`\{([A-Za-z0-9_-]+)\}`)

func (l *HTTP) Prepare(ctx context.Context, t *Target, c *Client) error {
	if !strings.HasPrefix(l.Path, "/") && !strings.HasPrefix(l.Path, "{") {
		return fmt.Errorf("path %q must start with / (or a {hole} a whole path fills)", l.Path)
	}
	// What the HTTP/1 client would refuse for every request, said once.
	if reason := h1.CheckToken(cmp.Or(l.Method, "GET")); reason != "" {
		return fmt.Errorf("method %q %s", l.Method, reason)
	}
	for _, f := range l.Header {
		if reason := cmp.Or(h1.CheckToken(f.Name), h1.CheckFieldValue(f.Value)); reason != "" {
			return fmt.Errorf("header %q %s", f.Name, reason)
		}
	}
	params := append([]Param(nil), l.Params...)
	if l.Param != "" {
		params = append(params, Param{Name: l.Param, Values: l.Values})
	}
	for i, p := range params {
		if !p.FromSitemap {
			continue
		}
		if l.SitemapPages == nil {
			return fmt.Errorf("{%s} from the sitemap: the microload has no sitemap reader", p.Name)
		}
		pages, err := l.SitemapPages(c)
		if err != nil {
			return Reframe(err, l.Name())
		}
		for _, page := range pages {
			if strings.HasPrefix(page, p.Prefix) {
				params[i].Values = append(params[i].Values, page)
			}
		}
		if len(params[i].Values) == 0 {
			return &NotFound{Microload: l.Name(), What: fmt.Sprintf("the sitemap lists no page under %q for {%s}", p.Prefix, p.Name)}
		}
	}
	paths, err := expand(l.Path, params)
	if err != nil {
		return err
	}
	l.paths = paths
	return nil
}

// paramsByName indexes params by name, and n is the requests they make:
// the most values any has (the others cycle through theirs), at most
// maxRequestKeys.
func paramsByName(params []Param) (map[string]Param, int, error) {
	n := 1
	byName := map[string]Param{}
	for _, p := range params {
		if len(p.Values) == 0 {
			return nil, 0, fmt.Errorf("parameter %s has no values", p.Name)
		}
		byName[p.Name] = p
		n = max(n, len(p.Values))
	}
	return byName, min(n, maxRequestKeys), nil
}

// ExpandData fills data's {name} holes, one message per value (parameters
// with fewer values cycle through theirs); JSON's own braces stay.
func ExpandData(data string, params []Param) ([]string, error) {
	byName, n, err := paramsByName(params)
	if err != nil {
		return nil, err
	}
	for _, p := range params {
		if !strings.Contains(data, "{"+p.Name+"}") {
			return nil, fmt.Errorf("--param %s: --data has no {%s}", p.Name, p.Name)
		}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = hole.ReplaceAllStringFunc(data, func(h string) string {
			p, ok := byName[h[1:len(h)-1]]
			if !ok {
				return h
			}
			return p.Values[i%len(p.Values)]
		})
	}
	return out, nil
}

// expand fills the holes of path and appends the other parameters, one
// request per value (parameters with fewer values cycle through theirs).
func expand(path string, params []Param) ([]string, error) {
	byName, n, err := paramsByName(params)
	if err != nil {
		return nil, err
	}
	for _, m := range hole.FindAllStringSubmatch(path, -1) {
		if _, ok := byName[m[1]]; !ok {
			return nil, fmt.Errorf("path %q: no values for {%s}", path, m[1])
		}
	}
	out := make([]string, 0, n)
	for i := range n {
		inPath := map[string]bool{}
		p := hole.ReplaceAllStringFunc(path, func(h string) string {
			name := h[1 : len(h)-1]
			inPath[name] = true
			prm := byName[name]
			v := prm.Values[i%len(prm.Values)]
			if prm.FromSitemap {
				return v
			}
			return url.PathEscape(v)
		})
		q := url.Values{}
		for _, prm := range params {
			if !inPath[prm.Name] {
				q.Set(prm.Name, prm.Values[i%len(prm.Values)])
			}
		}
		u, err := url.Parse(p)
		if err != nil {
			return nil, fmt.Errorf("path %q: %v", p, err)
		}
		uq := u.Query()
		for k, vs := range q {
			uq[k] = vs
		}
		if len(uq) > 0 {
			u.RawQuery = uq.Encode()
		}
		rp := u.RequestURI()
		if !SafePath(rp) {
			return nil, fmt.Errorf("path %q holds characters a request line cannot carry", rp)
		}
		out = append(out, rp)
	}
	return out, nil
}

func (l *HTTP) NewSession(ctx context.Context, c *Client, id int) (Session, error) {
	method := l.Method
	if method == "" {
		method = "GET"
	}
	op := method + " " + strings.SplitN(l.Path, "?", 2)[0]
	check := l.Check
	if check == nil {
		check = statusBelow400
	}
	calls := make([]Call, len(l.paths))
	for i, p := range l.paths {
		calls[(i+max(id, 0))%len(calls)] = Call{Op: op, Key: p, Req: c.Target().Request(method, p, l.Body, l.Header...), Check: check}
	}
	return StaticSession(calls), nil
}

func statusBelow400(r *Reply) error {
	if r.Status >= 400 {
		return fmt.Errorf("status %d", r.Status)
	}
	return nil
}
