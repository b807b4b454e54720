package probes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"probe/probes/h1"
)

// NoteQuery loads a query endpoint: each client posts the queries in turn,
// each query a request key of its own, and checks for a JSON reply.
type NoteQuery struct {
	Path    string  // the endpoint, e.g. /query
	Queries []Query // what to ask; at least one
}

// Query is one request body of a query endpoint.
type Query struct {
	Name        string // the row of the table: "POST /query filter-by-tag"
	Key         string // request key for reply digests: the same key, the same reply when the work is invariant
	Body        []byte
	ContentType string // default application/json
}

func (NoteQuery) Name() string { return "notequery" }

func (l NoteQuery) Prepare(ctx context.Context, t *Target, c *Client) error {
	if l.Path == "" || len(l.Queries) == 0 {
		return errors.New("notequery: no query endpoint or no queries to send")
	}
	_, err := fetch(c, l.call(t, 0))
	return err
}

func (l NoteQuery) NewSession(ctx context.Context, c *Client, id int) (Session, error) {
	calls := make([]Call, len(l.Queries))
	for i := range calls {
		calls[i] = l.call(c.target, (i+id)%len(l.Queries))
	}
	return staticSession(calls), nil
}

func (l NoteQuery) call(t *Target, i int) Call {
	q := l.Queries[i]
	ct := q.ContentType
	if ct == "" {
		ct = "application/json"
	}
	return Call{Op: "POST " + l.Path + " " + q.Name, Key: q.Key,
		Req: t.Request("POST", l.Path, q.Body, h1.Field{Name: "Content-Type", Value: ct}, acceptGzip),
		Check: func(r *Reply) error {
			if err := wantStatus(r, 200, "json"); err != nil {
				return err
			}
			if !json.Valid(r.Body) {
				return fmt.Errorf("query result is not JSON")
			}
			return nil
		}}
}
