package plan

import (
	"strings"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/grpc"
)

// grpcEntry reads an entry with a grpc key: a gRPC call of its own, as
// probe grpc makes it (--call, --data, --param, --header, --proto).
func (w walker) grpcEntry(raw map[string]any, at string) (Microload, error) {
	var m Microload
	if _, err := w.object(raw, at, "name", "grpc", "data", "params", "headers", "proto"); err != nil {
		return m, err
	}
	var err error
	if m.GRPC, m.Data, err = w.grpcCall(raw, at); err != nil {
		return m, err
	}
	if m.Params, err = w.paramsFilling(raw, at, m.Data, "a gRPC call's values", "data has"); err != nil {
		return m, err
	}
	if m.Headers, m.grpcHeader, err = w.headers(raw, "headers", at); err != nil {
		return m, err
	}
	if m.Proto, err = w.strs(raw, "proto", at); err != nil {
		return m, err
	}
	m.grpc = true
	return m, nil
}

// grpcCall reads a gRPC call's grpc key (package.Service/Method) and its
// data, the request message as JSON: an entry's and a scenario step's.
func (w walker) grpcCall(raw map[string]any, at string) (method, data string, err error) {
	if method, err = w.str(raw, "grpc", at); err != nil {
		return "", "", err
	}
	if _, _, ok := probes.SplitGRPCMethod(method); !ok {
		return "", "", w.fail(at+".grpc", "want package.Service/Method, got %q", method)
	}
	data, err = w.str(raw, "data", at)
	return method, data, err
}

// paramsFilling reads an entry's params, each of which fills a {hole} of
// template (a gRPC call's data, a tool's arguments), so they are listed,
// never drawn from a sitemap; listed and holder name in errors what the
// values are and what has the holes.
func (w walker) paramsFilling(raw map[string]any, at, template, listed, holder string) ([]probes.Param, error) {
	v, ok := raw["params"]
	if !ok {
		return nil, nil
	}
	params, err := w.params(v, at+".params")
	if err != nil {
		return nil, err
	}
	for _, p := range params {
		if p.FromSitemap {
			return nil, w.fail(at+".params."+p.Name, "%s are listed, not drawn from a sitemap", listed)
		}
		if !strings.Contains(template, "{"+p.Name+"}") {
			return nil, w.fail(at+".params."+p.Name, "%s no {%s} to fill", holder, p.Name)
		}
	}
	return params, nil
}

// grpcMicroload is a fresh gRPC microload of the entry.
func (m *Microload) grpcMicroload() probes.Microload {
	return &grpc.GRPC{Method: m.GRPC, Data: m.Data, Params: m.Params, Header: m.grpcHeader, Proto: m.Proto, Label: m.Name}
}
