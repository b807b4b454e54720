package probes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/probehq/probe/lib/h1"
)

// GRPCMethod is a scenario step's gRPC method once resolved (probes/grpc's
// Resolve): what the step's call needs to write its request and read its
// reply.
type GRPCMethod interface {
	Path() string                        // /package.Service/Method
	Request(data string) ([]byte, error) // the length-prefixed message of data (JSON of the input type)
	Check(r *Reply) error                // as a gRPC client reads a reply
	// JSONReply is r with its messages as JSON in place of gRPC's frames,
	// the JSON within maxBody.
	JSONReply(r *Reply, maxBody int) (*Reply, error)
}

// GRPCResolver finds method (package.Service/Method) on t: through the
// server's reflection service, or in the .proto files when given.
type GRPCResolver func(ctx context.Context, t *Target, method string, proto []string) (GRPCMethod, error)

// SplitGRPCMethod reads package.Service/Method (a leading / allowed): ok
// when both parts are there and make a request path the client sends.
func SplitGRPCMethod(m string) (svc, method string, ok bool) {
	svc, method, ok = strings.Cut(strings.TrimPrefix(m, "/"), "/")
	ok = ok && svc != "" && method != "" && !strings.Contains(method, "/") &&
		!strings.ContainsAny(m, " \t\r\n?#") && h1.CheckTarget("/"+svc+"/"+method) == ""
	return svc, method, ok
}

// GRPCHeader is what every gRPC request carries.
func GRPCHeader() []h1.Field {
	return []h1.Field{{Name: "Content-Type", Value: "application/grpc"}, {Name: "Te", Value: "trailers"}}
}

// grpcCall is step i, a gRPC call, its data's holes filled: a value that
// makes the data no message of the method's input is not sent.
func (s *Scenario) grpcCall(t *Target, i int, vals map[string]value, maxBody int) (Call, error) {
	st := s.Steps[i]
	m := st.GRPC.m
	if m == nil {
		return Call{}, errors.New("the gRPC method is not resolved (Scenario.Prepare)")
	}
	data, err := fillJSON(cmp.Or(st.GRPC.Data, "{}"), vals)
	if err != nil {
		return Call{}, err
	}
	frame, err := m.Request(data)
	if err != nil {
		return Call{}, fmt.Errorf("data %v", err)
	}
	header := GRPCHeader()
	for _, h := range st.Header {
		header = append(header, h1.Field{Name: h.Name, Value: fill(h.Value, vals, nil)})
	}
	user := st.Check
	check := func(r *Reply) error {
		if err := m.Check(r); err != nil || user == nil {
			return err
		}
		jr, err := m.JSONReply(r, maxBody)
		if err != nil {
			return err
		}
		return user(jr)
	}
	op := s.Name + "/" + st.Name
	return Call{Op: op, Key: op, Req: t.Request("POST", m.Path(), frame, header...), Check: check,
		Read: len(st.Extract) > 0}, nil
}
