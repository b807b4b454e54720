package plan

// A target file's checks and parameters: what a reply must be, and the
// values a request takes.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/probehq/probe/probes"
)

// params reads {name: values}: a list, a value, {range: [from, to]} or
// {sitemap: true | "/prefix/"}.
func (w walker) params(v any, at string) ([]probes.Param, error) {
	pm, ok := v.(map[string]any)
	if !ok {
		return nil, w.fail(at, "want an object of parameter names and values")
	}
	var out []probes.Param
	for _, name := range slices.Sorted(maps.Keys(pm)) {
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
func (w walker) checks(v any, at string) (*Checks, error) {
	m, err := w.object(v, at, "status", "contentType", "contains", "notContains", "json")
	if err != nil {
		return nil, err
	}
	statuses, err := w.strs(m, "status", at)
	if err != nil {
		return nil, err
	}
	c := &Checks{}
	for _, s := range statuses {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 || n > 599 {
			return nil, w.fail(at+".status", "want HTTP statuses, got %q", s)
		}
		c.Status = append(c.Status, n)
	}
	if c.ContentType, err = w.str(m, "contentType", at); err != nil {
		return nil, err
	}
	if c.Contains, err = w.strs(m, "contains", at); err != nil {
		return nil, err
	}
	if c.NotContains, err = w.strs(m, "notContains", at); err != nil {
		return nil, err
	}
	if c.JSON, err = w.str(m, "json", at); err != nil {
		return nil, err
	}
	steps, err := probes.ParseJSONPath(c.JSON)
	if err != nil {
		return nil, w.fail(at+".json", "%v", err)
	}
	c.check = c.compile(steps)
	return c, nil
}

// compile is the check of a reply; steps are c.JSON parsed.
func (c *Checks) compile(steps []any) func(*probes.Reply) error {
	want, ctype, contains, notContains, jsonPath := []int(c.Status), c.ContentType, c.Contains, c.NotContains, c.JSON
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
			if _, ok := probes.JSONAt(doc, steps); !ok {
				return fmt.Errorf("the reply has no %s", jsonPath)
			}
		}
		return nil
	}
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
