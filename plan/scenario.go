package plan

// A target file's scenarios: a user's sequence of requests, for probe ramp.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/grpc"
)

// scenario reads {name, values, steps: [{name, method, path, headers,
// body, checks, extract}]}; a step with grpc has data and proto in place
// of method, path and body.
func (w walker) scenario(v any, at string) (Scenario, error) {
	var out Scenario
	m, err := w.object(v, at, "name", "values", "steps")
	if err != nil {
		return out, err
	}
	sc := &probes.Scenario{Values: map[string][]string{}}
	out.Values = map[string]Values{}
	if sc.Name, err = w.str(m, "name", at); err != nil {
		return out, err
	}
	if sc.Name == "" || strings.ContainsAny(sc.Name, " /\\") {
		return out, w.fail(at+".name", "want a name without spaces or slashes")
	}
	if vs, ok := m["values"]; ok {
		vm, ok := vs.(map[string]any)
		if !ok {
			return out, w.fail(at+".values", "want an object of names and lists of values")
		}
		for _, name := range slices.Sorted(maps.Keys(vm)) {
			vals, err := w.values(vm[name], at+".values."+name)
			if err != nil {
				return out, err
			}
			if len(vals) == 0 {
				return out, w.fail(at+".values."+name, "no values")
			}
			sc.Values[name] = vals
			out.Values[name] = vals
		}
	}
	steps, ok := m["steps"].([]any)
	if !ok || len(steps) == 0 {
		return out, w.fail(at+".steps", "want a list of at least one step")
	}
	for i, e := range steps {
		sat := fmt.Sprintf("%s.steps[%d]", at, i)
		sm, err := w.object(e, sat, "name", "method", "path", "headers", "body", "checks", "extract", "grpc", "data", "proto")
		if err != nil {
			return out, err
		}
		_, isGRPC := sm["grpc"]
		st := probes.Step{Method: "GET"}
		var ms Step
		if st.Name, err = w.str(sm, "name", sat); err != nil {
			return out, err
		}
		if st.Name == "" {
			st.Name = fmt.Sprintf("step%d", i+1)
		}
		if s, err := w.str(sm, "method", sat); err != nil {
			return out, err
		} else if s != "" {
			st.Method = strings.ToUpper(s)
		}
		if isGRPC {
			if st.GRPC, err = w.grpcStep(sm, sat); err != nil {
				return out, err
			}
			ms.GRPC, ms.Data, ms.Proto = st.GRPC.Method, st.GRPC.Data, st.GRPC.Proto
		} else {
			for _, key := range []string{"data", "proto"} {
				if _, ok := sm[key]; ok {
					return out, w.fail(sat+"."+key, "%s is a gRPC step's (with grpc: package.Service/Method)", key)
				}
			}
			if st.Path, err = w.str(sm, "path", sat); err != nil {
				return out, err
			}
			if !strings.HasPrefix(st.Path, "/") && !strings.HasPrefix(st.Path, "{{") {
				return out, w.fail(sat+".path", "want a path that starts with / (or a {{value}} that is one), got %q", st.Path)
			}
		}
		if ms.Headers, st.Header, err = w.headers(sm, "headers", sat); err != nil {
			return out, err
		}
		if st.Body, err = w.str(sm, "body", sat); err != nil {
			return out, err
		}
		if c, ok := sm["checks"]; ok {
			if ms.Checks, err = w.checks(c, sat+".checks"); err != nil {
				return out, err
			}
			if isGRPC && (len(ms.Checks.Status) > 0 || ms.Checks.ContentType != "") {
				return out, w.fail(sat+".checks", "a gRPC step's status and content type are gRPC's, always checked "+
					"(grpc-status 0); its checks are contains, notContains and json, on the reply's messages as JSON")
			}
			st.Check = ms.Checks.check
		}
		if x, ok := sm["extract"]; ok {
			xm, ok := x.(map[string]any)
			if !ok {
				return out, w.fail(sat+".extract", "want an object of names and {json: PATH} | {header: NAME} | {regexp: RE}")
			}
			for _, name := range slices.Sorted(maps.Keys(xm)) {
				xat := sat + ".extract." + name
				spec, err := w.object(xm[name], xat, "json", "header", "regexp")
				if err != nil {
					return out, err
				}
				if len(spec) != 1 {
					return out, w.fail(xat, "want one of json, header or regexp")
				}
				ex := probes.Extract{Name: name}
				var mx Extract
				switch {
				case spec["json"] != nil:
					p, _ := spec["json"].(string)
					mx.JSON = p
					if ex.JSON, err = probes.ParseJSONPath(p); err != nil || p == "" {
						return out, w.fail(xat+".json", "want a path such as hits[0].path")
					}
				case spec["header"] != nil:
					if ex.Header, _ = spec["header"].(string); ex.Header == "" {
						return out, w.fail(xat+".header", "want a header name")
					}
				default:
					src, _ := spec["regexp"].(string)
					re, err := regexp.Compile(src)
					if err != nil || src == "" {
						return out, w.fail(xat+".regexp", "want a regexp (its first group is the value): %v", err)
					}
					ex.Regexp = re
				}
				mx.Header, mx.Regexp = ex.Header, ""
				if ex.Regexp != nil {
					mx.Regexp = ex.Regexp.String()
				}
				if ms.Extract == nil {
					ms.Extract = map[string]Extract{}
				}
				ms.Extract[name] = mx
				st.Extract = append(st.Extract, ex)
			}
		}
		ms.Name, ms.Method, ms.Path, ms.Body = st.Name, st.Method, st.Path, st.Body
		sc.Steps = append(sc.Steps, st)
		out.Steps = append(out.Steps, ms)
	}
	if err := sc.Validate(); err != nil {
		return out, w.fail(at, "%v", err)
	}
	out.Name, out.Probe = sc.Name, sc
	return out, nil
}

// grpcStep reads a step's gRPC call: grpc (package.Service/Method), data
// (the request message as JSON) and proto (files).
func (w walker) grpcStep(sm map[string]any, at string) (*probes.GRPCStep, error) {
	for _, key := range []string{"method", "path", "body"} {
		if _, ok := sm[key]; ok {
			return nil, w.fail(at+"."+key, "a gRPC step has grpc and data in place of method, path and body")
		}
	}
	g := &probes.GRPCStep{Resolve: grpc.Resolve}
	var err error
	if g.Method, g.Data, err = w.grpcCall(sm, at); err != nil {
		return nil, err
	}
	if g.Proto, err = w.strs(sm, "proto", at); err != nil {
		return nil, err
	}
	return g, nil
}
