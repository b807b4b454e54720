package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"probe/probes"
	"probe/probes/h1"
)

// A target file describes a server's microloads once: what to request,
// with which values, and what a reply must be. It is Jsonnet (or plain
// JSON); docs/DESIGN.md has the format and `probe init` writes one from
// what the server announces. An error in it is one line that names the
// place: "probe.jsonnet: microloads[2].checks: unknown key "stauts"".

// targetFile is a read target file.
type targetFile struct {
	path       string
	target     string
	pprof      string
	headers    []h1.Field
	microloads []fileMicroload
}

// fileMicroload is one entry of the file's microloads.
type fileMicroload struct {
	name  string
	use   string // a named microload, or "" for a request of the entry's own
	shape microloadFlags
	req   *probes.HTTP
}

// microload is the entry as a microload named as the file names it.
func (m fileMicroload) microload() (probes.Microload, error) {
	if m.req != nil {
		r := *m.req
		return &r, nil
	}
	ml, err := m.shape.build(m.use, false)
	if err != nil {
		return nil, err
	}
	if m.name == m.use {
		return ml, nil
	}
	return renamed{ml, m.name}, nil
}

// renamed is a named microload reported under the file's name for it.
type renamed struct {
	probes.Microload
	name string
}

func (r renamed) Name() string { return r.name }

// readTargetFile reads and checks a target file.
func readTargetFile(ctx context.Context, path string) (*targetFile, error) {
	src, err := readJSONOrJsonnet(ctx, path)
	if err != nil {
		return nil, usageError{"--file " + err.Error()}
	}
	f, err := parseTargetFile(path, src)
	if err != nil {
		return nil, usageError{"--file " + err.Error()}
	}
	return f, nil
}

// fileError is an error at a place in the file.
type fileError struct{ file, at, msg string }

func (e fileError) Error() string {
	if e.at == "" {
		return e.file + ": " + e.msg
	}
	return e.file + ": " + e.at + ": " + e.msg
}

// walker checks a decoded document against the format.
type walker struct{ file string }

func (w walker) fail(at, format string, args ...any) error {
	return fileError{w.file, at, fmt.Sprintf(format, args...)}
}

func (w walker) object(v any, at string, known ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, w.fail(at, "want an object, got %s", kindOf(v))
	}
	for k := range m {
		found := false
		for _, kk := range known {
			found = found || k == kk
		}
		if !found {
			return nil, w.fail(at, "unknown key %q (want %s)", k, strings.Join(known, ", "))
		}
	}
	return m, nil
}

func (w walker) str(m map[string]any, key, at string) (string, error) {
	v, ok := m[key]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", w.fail(join(at, key), "want a string, got %s", kindOf(v))
	}
	return s, nil
}

// strs reads a string or a list of strings (numbers become their text).
func (w walker) strs(m map[string]any, key, at string) ([]string, error) {
	v, ok := m[key]
	if !ok {
		return nil, nil
	}
	return w.values(v, join(at, key))
}

func (w walker) values(v any, at string) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case json.Number:
		return []string{x.String()}, nil
	case bool:
		return []string{strconv.FormatBool(x)}, nil
	case []any:
		var out []string
		for i, e := range x {
			s, err := w.values(e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			if len(s) != 1 {
				return nil, w.fail(fmt.Sprintf("%s[%d]", at, i), "want a string or a number")
			}
			out = append(out, s[0])
		}
		return out, nil
	}
	return nil, w.fail(at, "want a string, a number or a list of them, got %s", kindOf(v))
}

func (w walker) headers(m map[string]any, key, at string) ([]h1.Field, error) {
	v, ok := m[key]
	if !ok {
		return nil, nil
	}
	hm, ok := v.(map[string]any)
	if !ok {
		return nil, w.fail(join(at, key), "want an object of header names and values")
	}
	var out []h1.Field
	for _, name := range sortedNames(hm) {
		s, ok := hm[name].(string)
		if !ok {
			return nil, w.fail(join(at, key+"."+name), "want a string")
		}
		f, err := probes.ParseHeader(name + ": " + s)
		if err != nil {
			return nil, w.fail(join(at, key+"."+name), "%v", err)
		}
		out = append(out, f)
	}
	return out, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// parseTargetFile checks a target file's JSON and reads it.
func parseTargetFile(name string, src []byte) (*targetFile, error) {
	w := walker{file: name}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(src, se.Offset)
			return nil, fmt.Errorf("%s:%d:%d: %v", name, line, col, se)
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	root, err := w.object(doc, "", "target", "pprof", "headers", "microloads")
	if err != nil {
		return nil, err
	}
	f := &targetFile{path: name}
	if f.target, err = w.str(root, "target", ""); err != nil {
		return nil, err
	}
	if f.pprof, err = w.str(root, "pprof", ""); err != nil {
		return nil, err
	}
	if f.headers, err = w.headers(root, "headers", ""); err != nil {
		return nil, err
	}
	list, ok := root["microloads"].([]any)
	if !ok || len(list) == 0 {
		return nil, w.fail("microloads", "want a list of at least one microload")
	}
	names := map[string]bool{}
	for i, e := range list {
		at := fmt.Sprintf("microloads[%d]", i)
		m, err := w.microload(e, at)
		if err != nil {
			return nil, err
		}
		if names[m.name] {
			return nil, w.fail(at+".name", "%q names two microloads", m.name)
		}
		names[m.name] = true
		f.microloads = append(f.microloads, m)
	}
	return f, nil
}

// usesOptions are the options each named microload takes in a file.
var usesOptions = map[string][]string{
	"sitemap":   {"path"},
	"page":      {"path", "sitemap"},
	"feed":      {"feeds", "sitemap"},
	"search":    {"path", "queryParam", "sitemap"},
	"toolslist": {"path"},
	"notequery": {"path", "bodies", "method", "params"},
}

func (w walker) microload(v any, at string) (fileMicroload, error) {
	raw, ok := v.(map[string]any)
	if !ok {
		return fileMicroload{}, w.fail(at, "want an object")
	}
	use, _ := raw["use"].(string)
	var m fileMicroload
	var err error
	if use != "" {
		opts, ok := usesOptions[use]
		if !ok {
			return m, w.fail(at+".use", "%q is no microload (want sitemap, page, feed, search, toolslist or notequery)", use)
		}
		if _, err := w.object(raw, at, append([]string{"name", "use"}, opts...)...); err != nil {
			return m, err
		}
		m.use = use
		m.shape.queryParam = "q"
		for _, k := range []struct {
			key string
			dst *string
		}{{"path", &m.shape.path}, {"sitemap", &m.shape.sitemap}, {"queryParam", &m.shape.queryParam}, {"method", &m.shape.method}} {
			if _, set := raw[k.key]; set {
				if *k.dst, err = w.str(raw, k.key, at); err != nil {
					return m, err
				}
			}
		}
		if m.shape.feeds, err = w.strs(raw, "feeds", at); err != nil {
			return m, err
		}
		if m.shape.bodies, err = w.strs(raw, "bodies", at); err != nil {
			return m, err
		}
		if use == "notequery" && m.shape.method == "" {
			m.shape.method = "POST"
		}
		if p, ok := raw["params"]; ok {
			ps, err := w.params(p, at+".params")
			if err != nil {
				return m, err
			}
			if len(ps) != 1 || ps[0].FromSitemap {
				return m, w.fail(at+".params", "notequery takes one parameter with values")
			}
			m.shape.param = ps[0].Name + "=" + strings.Join(ps[0].Values, ",")
		}
	} else {
		if _, err := w.object(raw, at, "name", "method", "path", "params", "headers", "body", "checks"); err != nil {
			return m, err
		}
		req := &probes.HTTP{Method: "GET"}
		if s, err := w.str(raw, "method", at); err != nil {
			return m, err
		} else if s != "" {
			req.Method = strings.ToUpper(s)
		}
		if req.Path, err = w.str(raw, "path", at); err != nil {
			return m, err
		}
		if !strings.HasPrefix(req.Path, "/") && !strings.HasPrefix(req.Path, "{") {
			return m, w.fail(at+".path", "want a path that starts with / (or a {hole} a whole path fills), got %q", req.Path)
		}
		if p, ok := raw["params"]; ok {
			if req.Params, err = w.params(p, at+".params"); err != nil {
				return m, err
			}
		}
		if req.Header, err = w.headers(raw, "headers", at); err != nil {
			return m, err
		}
		body, err := w.str(raw, "body", at)
		if err != nil {
			return m, err
		}
		if body != "" {
			req.Body = []byte(body)
		}
		if c, ok := raw["checks"]; ok {
			if req.Check, err = w.checks(c, at+".checks"); err != nil {
				return m, err
			}
		}
		m.req = req
	}
	if m.name, err = w.str(raw, "name", at); err != nil {
		return m, err
	}
	if m.name == "" {
		m.name = use
	}
	if m.name == "" || strings.ContainsAny(m.name, " /\\") {
		return m, w.fail(at+".name", "want a name without spaces or slashes (it names the report's folder)")
	}
	if m.req != nil {
		m.req.Label = m.name
	}
	return m, nil
}

// params reads {name: values}: a list, a value, {range: [from, to]} or
// {sitemap: true | "/prefix/"}.
func (w walker) params(v any, at string) ([]probes.Param, error) {
	pm, ok := v.(map[string]any)
	if !ok {
		return nil, w.fail(at, "want an object of parameter names and values")
	}
	var out []probes.Param
	for _, name := range sortedNames(pm) {
		pat := join(at, name)
		p := probes.Param{Name: name}
		if spec, ok := pm[name].(map[string]any); ok {
			spec, err := w.object(spec, pat, "range", "sitemap")
			if err != nil {
				return nil, err
			}
			switch {
			case spec["range"] != nil:
				r, err := w.values(spec["range"], pat+".range")
				if err != nil || len(r) != 2 {
					return nil, w.fail(pat+".range", "want [from, to], two integers")
				}
				from, err1 := strconv.Atoi(r[0])
				to, err2 := strconv.Atoi(r[1])
				if err1 != nil || err2 != nil || to < from || to-from >= 10_000 {
					return nil, w.fail(pat+".range", "want [from, to], integers with from ≤ to and fewer than 10,000 values")
				}
				for n := from; n <= to; n++ {
					p.Values = append(p.Values, strconv.Itoa(n))
				}
			case spec["sitemap"] != nil:
				p.FromSitemap = true
				switch x := spec["sitemap"].(type) {
				case bool:
					if !x {
						return nil, w.fail(pat+".sitemap", "want true or a path prefix")
					}
				case string:
					p.Prefix = x
				default:
					return nil, w.fail(pat+".sitemap", "want true or a path prefix")
				}
			default:
				return nil, w.fail(pat, "want values, {range: [from, to]} or {sitemap: true}")
			}
		} else {
			vals, err := w.values(pm[name], pat)
			if err != nil {
				return nil, err
			}
			if len(vals) == 0 {
				return nil, w.fail(pat, "no values")
			}
			p.Values = vals
		}
		out = append(out, p)
	}
	return out, nil
}

// checks reads what a reply must be: status, contentType, contains,
// notContains, json (a path that must be there: a.b[0].c).
func (w walker) checks(v any, at string) (func(*probes.Reply) error, error) {
	m, err := w.object(v, at, "status", "contentType", "contains", "notContains", "json")
	if err != nil {
		return nil, err
	}
	statuses, err := w.strs(m, "status", at)
	if err != nil {
		return nil, err
	}
	var want []int
	for _, s := range statuses {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 || n > 599 {
			return nil, w.fail(at+".status", "want HTTP statuses, got %q", s)
		}
		want = append(want, n)
	}
	ctype, err := w.str(m, "contentType", at)
	if err != nil {
		return nil, err
	}
	contains, err := w.strs(m, "contains", at)
	if err != nil {
		return nil, err
	}
	notContains, err := w.strs(m, "notContains", at)
	if err != nil {
		return nil, err
	}
	jsonPath, err := w.str(m, "json", at)
	if err != nil {
		return nil, err
	}
	steps, err := parseJSONPath(jsonPath)
	if err != nil {
		return nil, w.fail(at+".json", "%v", err)
	}
	return func(r *probes.Reply) error {
		switch {
		case len(want) > 0 && !containsInt(want, r.Status):
			return fmt.Errorf("status %d, want %v", r.Status, want)
		case len(want) == 0 && r.Status >= 400:
			return fmt.Errorf("status %d", r.Status)
		case ctype != "" && !strings.Contains(r.Header("Content-Type"), ctype):
			return fmt.Errorf("content type %q, want %s", r.Header("Content-Type"), ctype)
		}
		for _, c := range contains {
			if !bytes.Contains(r.Body, []byte(c)) {
				return fmt.Errorf("the reply does not hold %q", c)
			}
		}
		for _, c := range notContains {
			if bytes.Contains(r.Body, []byte(c)) {
				return fmt.Errorf("the reply holds %q", c)
			}
		}
		if len(steps) > 0 {
			var doc any
			if err := json.Unmarshal(r.Body, &doc); err != nil {
				return fmt.Errorf("the reply is not JSON: %v", err)
			}
			if !jsonHas(doc, steps) {
				return fmt.Errorf("the reply has no %s", jsonPath)
			}
		}
		return nil
	}, nil
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// parseJSONPath reads a.b[0].c into steps: keys and indexes.
func parseJSONPath(p string) ([]any, error) {
	if p == "" {
		return nil, nil
	}
	var steps []any
	for _, part := range strings.Split(p, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			steps = append(steps, key)
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			n, err := strconv.Atoi(idx)
			if !ok || err != nil || n < 0 {
				return nil, fmt.Errorf("json path %q: want keys and [n] indexes", p)
			}
			steps = append(steps, n)
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return steps, nil
}

func jsonHas(doc any, steps []any) bool {
	for _, s := range steps {
		switch k := s.(type) {
		case string:
			m, ok := doc.(map[string]any)
			if !ok {
				return false
			}
			if doc, ok = m[k]; !ok {
				return false
			}
		case int:
			l, ok := doc.([]any)
			if !ok || k >= len(l) {
				return false
			}
			doc = l[k]
		}
	}
	return doc != nil
}

func position(src []byte, offset int64) (line, col int) {
	line, col = 1, 1
	for _, c := range src[:min(int64(len(src)), offset)] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
