package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/web"
)

// Parse checks a target file's JSON (name says where it came from) and
// reads it.
func Parse(name string, src []byte) (*Plan, error) {
	w := walker{file: name}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := analyzers.Position(src, se.Offset)
			return nil, fmt.Errorf("%s:%d:%d: %v", name, line, col, se)
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	root, err := w.object(doc, "", "$schema", "target", "pprof", "headers", "microloads", "scenarios", "mix", "agents", "ws")
	if err != nil {
		return nil, err
	}
	p := &Plan{File: name}
	if p.Schema, err = w.str(root, "$schema", ""); err != nil {
		return nil, err
	}
	if p.Target, err = w.str(root, "target", ""); err != nil {
		return nil, err
	}
	if p.Pprof, err = w.str(root, "pprof", ""); err != nil {
		return nil, err
	}
	if p.Headers, p.Header, err = w.headers(root, "headers", ""); err != nil {
		return nil, err
	}
	list, ok := root["microloads"].([]any)
	if _, has := root["microloads"]; (has || root["scenarios"] == nil && root["agents"] == nil && root["ws"] == nil) && (!ok || len(list) == 0) {
		return nil, w.fail("microloads", "want a list of at least one microload")
	}
	names := map[string]bool{}
	if p.Microloads, err = readNamed(w, list, "microloads", "microloads", names, walker.microload,
		func(m Microload) string { return m.Name }); err != nil {
		return nil, err
	}
	if v, ok := root["scenarios"]; ok {
		sl, ok := v.([]any)
		if !ok || len(sl) == 0 {
			return nil, w.fail("scenarios", "want a list of at least one scenario")
		}
		if p.Scenarios, err = readNamed(w, sl, "scenarios", "microloads or scenarios", names, walker.scenario,
			func(sc Scenario) string { return sc.Name }); err != nil {
			return nil, err
		}
	}
	if v, ok := root["agents"]; ok {
		if p.Agents, err = w.agents(v, "agents"); err != nil {
			return nil, err
		}
	}
	if v, ok := root["ws"]; ok {
		if p.WS, err = w.ws(v, "ws"); err != nil {
			return nil, err
		}
	}
	if v, ok := root["mix"]; ok {
		m, ok := v.(map[string]any)
		if !ok || len(m) == 0 {
			return nil, w.fail("mix", "want an object of scenario or microload names and weights")
		}
		p.Mix = map[string]float64{}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if !names[name] {
				return nil, w.fail("mix."+name, "no scenario or microload of the file is named %q", name)
			}
			n, ok := m[name].(json.Number)
			x, err := n.Float64()
			if !ok || err != nil || !(x > 0) || x > 1e6 {
				return nil, w.fail("mix."+name, "want a weight above 0")
			}
			p.Mix[name] = x
		}
	}
	return p, nil
}

// readNamed reads list, the entries of key, each with read, refusing a
// name names already holds (an earlier entry's, of this list or another);
// twoNames is what the refusal says the name would name two of.
func readNamed[T any](w walker, list []any, key, twoNames string, names map[string]bool,
	read func(walker, any, string) (T, error), name func(T) string) ([]T, error) {
	var out []T
	for i, e := range list {
		at := fmt.Sprintf("%s[%d]", key, i)
		x, err := read(w, e, at)
		if err != nil {
			return nil, err
		}
		if names[name(x)] {
			return nil, w.fail(at+".name", "%q names two %s", name(x), twoNames)
		}
		names[name(x)] = true
		out = append(out, x)
	}
	return out, nil
}

func (w walker) microload(v any, at string) (Microload, error) {
	raw, ok := v.(map[string]any)
	if !ok {
		return Microload{}, w.fail(at, "want an object")
	}
	use, _ := raw["use"].(string)
	var m Microload
	var err error
	if use != "" {
		k, ok := Lookup(use)
		if !ok {
			return m, w.fail(at+".use", "%q is no microload (want %s)", use, orList(Names()))
		}
		if _, err := w.object(raw, at, append([]string{"name", "use"}, k.Keys()...)...); err != nil {
			return m, err
		}
		m.Use = use
		k.defaults(&m)
		for _, o := range k.Options {
			str, list := m.Field(o.Key)
			if _, set := raw[o.Key]; !set || o.Key == "params" {
				continue
			}
			if list != nil {
				if *list, err = w.strs(raw, o.Key, at); err != nil {
					return m, err
				}
			} else if *str, err = w.str(raw, o.Key, at); err != nil {
				return m, err
			}
		}
		if p, ok := raw["params"]; ok {
			ps, err := w.params(p, at+".params")
			if err != nil {
				return m, err
			}
			if len(ps) != 1 || ps[0].FromSitemap {
				return m, w.fail(at+".params", "notequery takes one parameter with values")
			}
			m.Params = ps
			m.Param = ps[0].Name + "=" + strings.Join(ps[0].Values, ",")
		}
	} else if _, ok := raw["grpc"]; ok {
		if m, err = w.grpcEntry(raw, at); err != nil {
			return m, err
		}
	} else if _, ok := raw["mcp"]; ok {
		if m, err = w.mcpEntry(raw, at); err != nil {
			return m, err
		}
	} else {
		if _, err := w.object(raw, at, "name", "method", "path", "params", "headers", "body", "checks"); err != nil {
			return m, err
		}
		req := &probes.HTTP{Method: "GET", SitemapPages: web.SitemapPages}
		if s, err := w.str(raw, "method", at); err != nil {
			return m, err
		} else if s != "" {
			req.Method = strings.ToUpper(s)
		}
		m.Method = req.Method
		if req.Path, err = w.str(raw, "path", at); err != nil {
			return m, err
		}
		m.Path = req.Path
		if !strings.HasPrefix(req.Path, "/") && !strings.HasPrefix(req.Path, "{") {
			return m, w.fail(at+".path", "want a path that starts with / (or a {hole} a whole path fills), got %q", req.Path)
		}
		if p, ok := raw["params"]; ok {
			if req.Params, err = w.params(p, at+".params"); err != nil {
				return m, err
			}
			m.Params = req.Params
		}
		if m.Headers, req.Header, err = w.headers(raw, "headers", at); err != nil {
			return m, err
		}
		if m.Body, err = w.str(raw, "body", at); err != nil {
			return m, err
		}
		if m.Body != "" {
			req.Body = []byte(m.Body)
		}
		if c, ok := raw["checks"]; ok {
			if m.Checks, err = w.checks(c, at+".checks"); err != nil {
				return m, err
			}
			req.Check = m.Checks.check
		}
		m.request = req
	}
	if m.Name, err = w.str(raw, "name", at); err != nil {
		return m, err
	}
	if m.Name == "" {
		m.Name = use
	}
	if m.Name == "" && m.grpc {
		m.Name = "grpc"
	}
	if m.Name == "" && m.mcp {
		m.Name = "mcp"
	}
	if m.Name == "" || strings.ContainsAny(m.Name, " /\\") {
		return m, w.fail(at+".name", "want a name without spaces or slashes (it names the report's folder)")
	}
	if m.request != nil {
		m.request.Label = m.Name
	}
	return m, nil
}

// orList is "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
