package fuzz

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/probehq/probe/result"
)

// Kind is what a placeholder stands for.
type Kind string

const (
	Int     Kind = "int"
	Uint    Kind = "uint"
	Str     Kind = "str"
	JSON    Kind = "json"
	Jsonnet Kind = "jsonnet"
	Method  Kind = "method" // only as the whole method
)

var kinds = []Kind{Int, Uint, Str, JSON, Jsonnet, Method}

const knownPlaceholders = "{int} {uint} {str} {json} {jsonnet} {method}"

// Place is where a hole stands in a request; it decides how a value is
// escaped and which values can be sent there at all.
type Place string

const (
	InPath       Place = "path"
	InQuery      Place = "query"
	InHeader     Place = "header"
	InCookie     Place = "cookie"
	InMethod     Place = "method"
	InBodyString Place = "body string" // between the quotes of a JSON string
	InBodyJSON   Place = "body value"  // where a JSON value stands
	InBody       Place = "body"        // a body that is not JSON: the value as is
)

// Template is one request with holes: in the path and query
// (`/x?depth={int}&q={str}`), in header values (`X-Region: {str}`, a cookie
// `Cookie: a={str}`), as the method (`{method}`) or in the body
// (`{"n": {int}, "s": {str}}`). A value is escaped for where its hole is:
// percent-encoded in the path and query, outside RFC 6265's cookie octets
// in a cookie, JSON-escaped inside a quoted string of a JSON body and
// written as a JSON value of its kind outside one; header values and
// methods are sent as they are, so only values the wire can carry there are
// generated for them.
type Template struct {
	Method string
	Path   string
	Header []result.FuzzField
	Body   string
	// Endpoint, when set, is what the report calls the template's way in
	// (an MCP tool: "tools/call NAME", all tools sharing one path); else
	// its path without the query.
	Endpoint string
	// HoleNames, when set, name the holes in order for a person (an MCP
	// tool's arguments: "the argument n"); else where they stand names them.
	HoleNames []string
	holes     []hole
}

type hole struct {
	kind  Kind
	place Place
	field int // the header's index, for header and cookie holes
	start int // in Path, Body or the header's value
	end   int
	// values is this hole's draw: its extremes first, then its pool of
	// boundary values, each one the place can carry.
	extremes, pool []string
}

var placeholder = regexp.MustCompile(`\{([a-z]+)\}`)

// ParseTemplate finds the holes of a request without headers.
func ParseTemplate(method, path, body string) (*Template, error) {
	return NewTemplate(method, path, nil, body)
}

// NewTemplate finds the holes of a request; a template without any is an
// error: there would be nothing to vary.
func NewTemplate(method, path string, header []result.FuzzField, body string) (*Template, error) {
	if method == "" {
		method = "GET"
		if body != "" {
			method = "POST"
		}
	}
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q must start with /", path)
	}
	t := &Template{Method: method, Path: path, Header: header, Body: body}
	if err := t.findMethodHole(); err != nil {
		return nil, err
	}
	jsonBody := isJSONTemplate(body)
	type part struct {
		text  string
		field int
		place func(at int) Place
	}
	parts := []part{{path, -1, func(at int) Place {
		if strings.Contains(path[:at], "?") {
			return InQuery
		}
		return InPath
	}}}
	for i, f := range header {
		if strings.ContainsAny(f.Name, "{}") {
			return nil, fmt.Errorf("header name %q: holes go in header values, not names", f.Name)
		}
		place := InHeader
		if strings.EqualFold(f.Name, "Cookie") {
			place = InCookie
		}
		parts = append(parts, part{f.Value, i, func(int) Place { return place }})
	}
	parts = append(parts, part{body, -1, func(at int) Place {
		switch {
		case !jsonBody:
			return InBody
		case insideJSONString(body[:at]):
			return InBodyString
		}
		return InBodyJSON
	}})
	for _, p := range parts {
		for _, m := range placeholder.FindAllStringSubmatchIndex(p.text, -1) {
			k := Kind(p.text[m[2]:m[3]])
			if !knownKind(k) {
				return nil, fmt.Errorf("unknown placeholder {%s} in %q; known: %s", k, p.text, knownPlaceholders)
			}
			if k == Method {
				return nil, fmt.Errorf("{method} in %q: it stands only as the whole method (--method {method})", p.text)
			}
			t.holes = append(t.holes, newHole(k, p.place(m[0]), p.field, m[0], m[1]))
		}
	}
	if len(t.holes) == 0 {
		return nil, fmt.Errorf("template %s has no placeholder (%s): there is nothing to fuzz", t, knownPlaceholders)
	}
	return t, nil
}

// findMethodHole reads the method: a token, or the hole {method}.
func (t *Template) findMethodHole() error {
	if t.Method == "{method}" {
		t.holes = append(t.holes, newHole(Method, InMethod, -1, 0, len(t.Method)))
		return nil
	}
	if strings.ContainsAny(t.Method, "{}") {
		return fmt.Errorf("method %q: want a method such as GET, or the hole {method}", t.Method)
	}
	if !isToken(t.Method) {
		return fmt.Errorf("method %q is not an HTTP token", t.Method)
	}
	return nil
}

func newHole(k Kind, p Place, field, start, end int) hole {
	h := hole{kind: k, place: p, field: field, start: start, end: end}
	h.extremes = sendableOnly(p, Extremes(k, p))
	h.pool = sendableOnly(p, boundaryValues(k, p))
	return h
}

func sendableOnly(p Place, vs []string) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if Sendable(p, v) && len(v) <= valueLimit(p) {
			out = append(out, v)
		}
	}
	return out
}

// isJSONTemplate: a body is JSON when it parses with its holes filled
// by plain values.
func isJSONTemplate(body string) bool {
	if strings.TrimSpace(body) == "" {
		return false
	}
	var b strings.Builder
	last := 0
	for _, m := range placeholder.FindAllStringIndex(body, -1) {
		b.WriteString(body[last:m[0]])
		if insideJSONString(body[:m[0]]) {
			b.WriteString("x")
		} else {
			b.WriteString("0")
		}
		last = m[1]
	}
	b.WriteString(body[last:])
	return json.Valid([]byte(b.String()))
}

func knownKind(k Kind) bool {
	for _, known := range kinds {
		if k == known {
			return true
		}
	}
	return false
}

// insideJSONString reports whether text ends inside a quoted string.
func insideJSONString(text string) bool {
	in := false
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\\':
			if in {
				i++
			}
		case '"':
			in = !in
		}
	}
	return in
}

// Kinds lists the template's holes in order.
func (t *Template) Kinds() []Kind {
	out := make([]Kind, len(t.holes))
	for i, h := range t.holes {
		out[i] = h.kind
	}
	return out
}

// Places lists where the template's holes stand, in order.
func (t *Template) Places() []Place {
	out := make([]Place, len(t.holes))
	for i, h := range t.holes {
		out[i] = h.place
	}
	return out
}

// HoleName names hole i for a person: "the header X-Region", "the method".
func (t *Template) HoleName(i int) string {
	h := t.holes[i]
	if i < len(t.HoleNames) && t.HoleNames[i] != "" {
		return fmt.Sprintf("{%s} as %s", h.kind, t.HoleNames[i])
	}
	switch h.place {
	case InHeader:
		return fmt.Sprintf("{%s} in the header %s", h.kind, t.Header[h.field].Name)
	case InCookie:
		return fmt.Sprintf("{%s} in the cookie", h.kind)
	case InMethod:
		return "{method}, the method"
	}
	return fmt.Sprintf("{%s} in the %s", h.kind, h.place)
}

// String is the template as given.
func (t *Template) String() string {
	s := t.Method + " " + t.Path
	if t.Endpoint != "" {
		s = t.Endpoint + ": " + s
	}
	for _, f := range t.Header {
		s += fmt.Sprintf(" [%s: %s]", f.Name, f.Value)
	}
	if t.Body != "" {
		s += " with body " + t.Body
	}
	return s
}

// Request is the template filled with values, one per hole.
func (t *Template) Request(values []string) result.FuzzRequest {
	r := result.FuzzRequest{Method: t.Method}
	var path, body strings.Builder
	headers := make([]strings.Builder, len(t.Header))
	pi, bi := 0, 0
	hi := make([]int, len(t.Header))
	for i, h := range t.holes {
		v := values[i]
		switch h.place {
		case InMethod:
			r.Method = v
		case InPath, InQuery:
			path.WriteString(t.Path[pi:h.start])
			if h.place == InQuery {
				path.WriteString(url.QueryEscape(v))
			} else {
				path.WriteString(url.PathEscape(v))
			}
			pi = h.end
		case InHeader, InCookie:
			b, text := &headers[h.field], t.Header[h.field].Value
			b.WriteString(text[hi[h.field]:h.start])
			if h.place == InCookie {
				v = cookieEscape(v)
			}
			b.WriteString(v)
			hi[h.field] = h.end
		default:
			body.WriteString(t.Body[bi:h.start])
			body.WriteString(bodyValue(h, v))
			bi = h.end
		}
	}
	path.WriteString(t.Path[pi:])
	r.Path = path.String()
	for i, f := range t.Header {
		headers[i].WriteString(f.Value[hi[i]:])
		r.Header = append(r.Header, result.FuzzField{Name: f.Name, Value: headers[i].String()})
	}
	if t.Body != "" {
		body.WriteString(t.Body[bi:])
		r.Body = []byte(body.String())
	}
	return r
}

// bodyValue is v written where h stands in the body.
func bodyValue(h hole, v string) string {
	switch h.place {
	case InBodyString:
		q, _ := json.Marshal(v)
		return string(q[1 : len(q)-1])
	case InBodyJSON:
		if h.kind == Str || h.kind == Jsonnet || h.kind == Method {
			q, _ := json.Marshal(v)
			return string(q)
		}
	}
	return v
}

// cookieEscape percent-encodes the bytes RFC 6265 does not allow in a
// cookie value (controls, space, '"', ',', ';', '\\' and non-ASCII), so the
// server's cookie parser keeps the cookie instead of dropping it.
func cookieEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == 0x21 || c >= 0x23 && c <= 0x2b || c >= 0x2d && c <= 0x3a || c >= 0x3c && c <= 0x5b || c >= 0x5d && c <= 0x7e {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// isToken: RFC 9110's token, what a method and a header name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// validHeaderValue: what net/http (and lib/h1) send as a header value:
// no control bytes but tab, and no leading or trailing white space,
// which clients trim and would make the sent bytes differ from the value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return strings.TrimSpace(v) == v
}

// Sendable reports whether a value can stand at place p on the wire as
// HTTP: a method must be a token, a header value free of control bytes.
// Values that cannot are never generated there (the client would refuse
// them, and a refusal is no crash of the target).
func Sendable(p Place, v string) bool {
	switch p {
	case InMethod:
		return isToken(v)
	case InHeader:
		return validHeaderValue(v)
	}
	return true
}

// sendable checks a whole request.
func sendable(r result.FuzzRequest) string {
	if !isToken(r.Method) {
		return fmt.Sprintf("method %.40q is not a token", r.Method)
	}
	for _, f := range r.Header {
		if !validHeaderValue(f.Value) {
			return fmt.Sprintf("header %s: a value with control bytes", f.Name)
		}
	}
	return ""
}
