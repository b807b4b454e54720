package fuzz

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Kind is what a placeholder stands for.
type Kind string

const (
	Int     Kind = "int"
	Uint    Kind = "uint"
	Str     Kind = "str"
	JSON    Kind = "json"
	Jsonnet Kind = "jsonnet"
)

var kinds = []Kind{Int, Uint, Str, JSON, Jsonnet}

// Template is one request with holes: `/x?depth={int}&q={str}`, or a body
// such as `{"query": "{jsonnet}"}`. A value is escaped for where its hole
// is: percent-encoded in the path and query, JSON-escaped inside a quoted
// string of the body, as is elsewhere in the body.
type Template struct {
	Method string
	Path   string
	Body   string
	holes  []hole
}

type hole struct {
	kind     Kind
	inBody   bool
	inQuery  bool // after the path's '?'
	inString bool // between quotes of the body
	start    int  // in Path or Body
	end      int
}

var placeholder = regexp.MustCompile(`\{([a-z]+)\}`)

// ParseTemplate finds the holes of a request; a template without any is an
// error: there would be nothing to vary.
func ParseTemplate(method, path, body string) (*Template, error) {
	if method == "" {
		method = "GET"
		if body != "" {
			method = "POST"
		}
	}
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q must start with /", path)
	}
	t := &Template{Method: method, Path: path, Body: body}
	for _, part := range []struct {
		text   string
		inBody bool
	}{{path, false}, {body, true}} {
		for _, m := range placeholder.FindAllStringSubmatchIndex(part.text, -1) {
			k := Kind(part.text[m[2]:m[3]])
			if !knownKind(k) {
				return nil, fmt.Errorf("unknown placeholder {%s} in %q; known: {int} {uint} {str} {json} {jsonnet}", k, part.text)
			}
			h := hole{kind: k, inBody: part.inBody, start: m[0], end: m[1]}
			if part.inBody {
				h.inString = insideJSONString(part.text[:m[0]])
			} else {
				h.inQuery = strings.Contains(part.text[:m[0]], "?")
			}
			t.holes = append(t.holes, h)
		}
	}
	if len(t.holes) == 0 {
		return nil, fmt.Errorf("template %s %s has no placeholder ({int} {uint} {str} {json} {jsonnet}): there is nothing to fuzz", method, describe(path, body))
	}
	return t, nil
}

func describe(path, body string) string {
	if body == "" {
		return path
	}
	return path + " with body " + body
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

// String is the template as given.
func (t *Template) String() string { return t.Method + " " + describe(t.Path, t.Body) }

// Request is the template filled with values: method, path and body.
func (t *Template) Request(values []string) (method, path string, body []byte) {
	path, body = t.Render(values)
	return t.Method, path, body
}

// Render fills the holes with values, one per hole.
func (t *Template) Render(values []string) (path string, body []byte) {
	var p, b strings.Builder
	pi, bi := 0, 0
	for i, h := range t.holes {
		v := values[i]
		if h.inBody {
			b.WriteString(t.Body[bi:h.start])
			if h.inString {
				q, _ := json.Marshal(v)
				v = string(q[1 : len(q)-1])
			}
			b.WriteString(v)
			bi = h.end
			continue
		}
		p.WriteString(t.Path[pi:h.start])
		if h.inQuery {
			v = url.QueryEscape(v)
		} else {
			v = url.PathEscape(v)
		}
		p.WriteString(v)
		pi = h.end
	}
	p.WriteString(t.Path[pi:])
	if t.Body != "" {
		b.WriteString(t.Body[bi:])
	}
	return p.String(), []byte(b.String())
}
