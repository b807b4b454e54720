package cli

// A target file's scenarios: a user's sequence of requests, for probe ramp.

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/probehq/probe/probes"
)

// scenario reads {name, values, steps: [{name, method, path, headers,
// body, checks, extract}]}.
func (w walker) scenario(v any, at string) (*probes.Scenario, error) {
	m, err := w.object(v, at, "name", "values", "steps")
	if err != nil {
		return nil, err
	}
	sc := &probes.Scenario{Values: map[string][]string{}}
	if sc.Name, err = w.str(m, "name", at); err != nil {
		return nil, err
	}
	if sc.Name == "" || strings.ContainsAny(sc.Name, " /\\") {
		return nil, w.fail(at+".name", "want a name without spaces or slashes")
	}
	if vs, ok := m["values"]; ok {
		vm, ok := vs.(map[string]any)
		if !ok {
			return nil, w.fail(at+".values", "want an object of names and lists of values")
		}
		for _, name := range sortedNames(vm) {
			vals, err := w.values(vm[name], at+".values."+name)
			if err != nil {
				return nil, err
			}
			if len(vals) == 0 {
				return nil, w.fail(at+".values."+name, "no values")
			}
			sc.Values[name] = vals
		}
	}
	steps, ok := m["steps"].([]any)
	if !ok || len(steps) == 0 {
		return nil, w.fail(at+".steps", "want a list of at least one step")
	}
	for i, e := range steps {
		sat := fmt.Sprintf("%s.steps[%d]", at, i)
		sm, err := w.object(e, sat, "name", "method", "path", "headers", "body", "checks", "extract")
		if err != nil {
			return nil, err
		}
		st := probes.Step{Method: "GET"}
		if st.Name, err = w.str(sm, "name", sat); err != nil {
			return nil, err
		}
		if st.Name == "" {
			st.Name = fmt.Sprintf("step%d", i+1)
		}
		if s, err := w.str(sm, "method", sat); err != nil {
			return nil, err
		} else if s != "" {
			st.Method = strings.ToUpper(s)
		}
		if st.Path, err = w.str(sm, "path", sat); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(st.Path, "/") && !strings.HasPrefix(st.Path, "{{") {
			return nil, w.fail(sat+".path", "want a path that starts with / (or a {{value}} that is one), got %q", st.Path)
		}
		if st.Header, err = w.headers(sm, "headers", sat); err != nil {
			return nil, err
		}
		if st.Body, err = w.str(sm, "body", sat); err != nil {
			return nil, err
		}
		if c, ok := sm["checks"]; ok {
			if st.Check, err = w.checks(c, sat+".checks"); err != nil {
				return nil, err
			}
		}
		if x, ok := sm["extract"]; ok {
			xm, ok := x.(map[string]any)
			if !ok {
				return nil, w.fail(sat+".extract", "want an object of names and {json: PATH} | {header: NAME} | {regexp: RE}")
			}
			for _, name := range sortedNames(xm) {
				xat := sat + ".extract." + name
				spec, err := w.object(xm[name], xat, "json", "header", "regexp")
				if err != nil {
					return nil, err
				}
				if len(spec) != 1 {
					return nil, w.fail(xat, "want one of json, header or regexp")
				}
				ex := probes.Extract{Name: name}
				switch {
				case spec["json"] != nil:
					p, _ := spec["json"].(string)
					if ex.JSON, err = probes.ParseJSONPath(p); err != nil || p == "" {
						return nil, w.fail(xat+".json", "want a path such as hits[0].path")
					}
				case spec["header"] != nil:
					if ex.Header, _ = spec["header"].(string); ex.Header == "" {
						return nil, w.fail(xat+".header", "want a header name")
					}
				default:
					src, _ := spec["regexp"].(string)
					re, err := regexp.Compile(src)
					if err != nil || src == "" {
						return nil, w.fail(xat+".regexp", "want a regexp (its first group is the value): %v", err)
					}
					ex.Regexp = re
				}
				st.Extract = append(st.Extract, ex)
			}
		}
		sc.Steps = append(sc.Steps, st)
	}
	if err := sc.Validate(); err != nil {
		return nil, w.fail(at, "%v", err)
	}
	return sc, nil
}
