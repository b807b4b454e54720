package grpc

import (
	"context"

	"github.com/probehq/probe/probes"
)

// Resolve finds method on t for a scenario's gRPC step
// (probes.GRPCStep.Resolve): through the server's reflection service, or
// in the .proto files when given.
func Resolve(ctx context.Context, t *probes.Target, method string, proto []string) (probes.GRPCMethod, error) {
	m, err := resolveGRPCMethod(ctx, t, method, proto)
	if err != nil {
		return nil, err
	}
	return stepMethod{&m}, nil
}

// stepMethod is a resolved method as a scenario step calls it.
type stepMethod struct{ m *grpcMethod }

func (s stepMethod) Path() string                        { return s.m.path }
func (s stepMethod) Request(data string) ([]byte, error) { return s.m.request(data) }

func (s stepMethod) Check(r *probes.Reply) error {
	_, err := s.m.check(r)
	return err
}

// JSONReply is r with its messages as JSON in place of gRPC's frames, the
// JSON within maxBody.
func (s stepMethod) JSONReply(r *probes.Reply, maxBody int) (*probes.Reply, error) {
	j, err := s.m.replyJSON(r.Body, maxBody)
	if err != nil {
		return nil, err
	}
	return &probes.Reply{Status: r.Status, Header: r.Header, Body: j}, nil
}
