package probes

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/probehq/probe/lib/h1"
)

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
	frame, err := m.request(data)
	if err != nil {
		return Call{}, fmt.Errorf("data %v", err)
	}
	header := grpcHeader()
	for _, h := range st.Header {
		header = append(header, h1.Field{Name: h.Name, Value: fill(h.Value, vals, nil)})
	}
	user := st.Check
	check := func(r *Reply) error {
		if _, err := m.check(r); err != nil || user == nil {
			return err
		}
		jr, err := m.jsonReply(r, maxBody)
		if err != nil {
			return err
		}
		return user(jr)
	}
	op := s.Name + "/" + st.Name
	return Call{Op: op, Key: op, Req: t.Request("POST", m.path, frame, header...), Check: check,
		Read: len(st.Extract) > 0}, nil
}

// jsonReply is r with its messages as JSON in place of gRPC's frames,
// the JSON within maxBody.
func (m *grpcMethod) jsonReply(r *Reply, maxBody int) (*Reply, error) {
	j, err := m.replyJSON(r.Body, maxBody)
	if err != nil {
		return nil, err
	}
	return &Reply{Status: r.Status, Header: r.Header, Body: j}, nil
}
