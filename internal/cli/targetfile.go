package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
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
	scenarios  []*probes.Scenario
	mix        map[string]float64 // name of a scenario or microload → weight; nil: each scenario once
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

// parseTargetFile checks a target file's JSON and reads it.
func parseTargetFile(name string, src []byte) (*targetFile, error) {
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
	root, err := w.object(doc, "", "target", "pprof", "headers", "microloads", "scenarios", "mix")
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
	if _, has := root["microloads"]; (has || root["scenarios"] == nil) && (!ok || len(list) == 0) {
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
	if v, ok := root["scenarios"]; ok {
		sl, ok := v.([]any)
		if !ok || len(sl) == 0 {
			return nil, w.fail("scenarios", "want a list of at least one scenario")
		}
		for i, e := range sl {
			at := fmt.Sprintf("scenarios[%d]", i)
			sc, err := w.scenario(e, at)
			if err != nil {
				return nil, err
			}
			if names[sc.Name] {
				return nil, w.fail(at+".name", "%q names two microloads or scenarios", sc.Name)
			}
			names[sc.Name] = true
			f.scenarios = append(f.scenarios, sc)
		}
	}
	if v, ok := root["mix"]; ok {
		m, ok := v.(map[string]any)
		if !ok || len(m) == 0 {
			return nil, w.fail("mix", "want an object of scenario or microload names and weights")
		}
		f.mix = map[string]float64{}
		for _, name := range sortedNames(m) {
			if !names[name] {
				return nil, w.fail("mix."+name, "no scenario or microload of the file is named %q", name)
			}
			n, ok := m[name].(json.Number)
			x, err := n.Float64()
			if !ok || err != nil || !(x > 0) || x > 1e6 {
				return nil, w.fail("mix."+name, "want a weight above 0")
			}
			f.mix[name] = x
		}
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
