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
	if m.GRPC, err = w.str(raw, "grpc", at); err != nil {
		return m, err
	}
	if _, _, ok := probes.SplitGRPCMethod(m.GRPC); !ok {
		return m, w.fail(at+".grpc", "want package.Service/Method, got %q", m.GRPC)
	}
	if m.Data, err = w.str(raw, "data", at); err != nil {
		return m, err
	}
	if p, ok := raw["params"]; ok {
		if m.Params, err = w.params(p, at+".params"); err != nil {
			return m, err
		}
		for _, p := range m.Params {
			if p.FromSitemap {
				return m, w.fail(at+".params."+p.Name, "a gRPC call's values are listed, not drawn from a sitemap")
			}
			if !strings.Contains(m.Data, "{"+p.Name+"}") {
				return m, w.fail(at+".params."+p.Name, "data has no {%s} to fill", p.Name)
			}
		}
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

// grpcMicroload is a fresh gRPC microload of the entry.
func (m *Microload) grpcMicroload() probes.Microload {
	return &grpc.GRPC{Method: m.GRPC, Data: m.Data, Params: m.Params, Header: m.grpcHeader, Proto: m.Proto, Label: m.Name}
}
