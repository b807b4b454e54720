package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/probehq/probe/probes"

	"github.com/probehq/probe/lib/h1"
)

// NoteQuery loads a query endpoint: each client sends the queries in turn,
// each query a request key of its own, and checks for a 200 reply (JSON
// when it says it is JSON). Without a path it finds the endpoint the site
// announces (discoverNoteQuery); without queries it asks what Known holds
// for the dialect the announcement names.
type NoteQuery struct {
	Path    string  // the endpoint, e.g. /query; empty: the announced one
	Queries []Query // what to ask; empty: Known's for the announced profile
	// Known are the queries probe knows for a dialect, by the profile URI
	// a site's announcement names it with (the fixture's, say).
	Known map[string][]Query
}

// Query is one query of a query endpoint: a body to POST, or (Method GET)
// a query string to append.
type Query struct {
	Name        string // the row of the table: "POST /query filter-by-tag"
	Key         string // request key for reply digests: the same key, the same reply when the work is invariant
	Method      string // POST (default) or GET
	Body        []byte // POST: the body
	RawQuery    string // GET: the query string
	ContentType string // POST: default application/json
}

func (*NoteQuery) Name() string { return "notequery" }

func (l *NoteQuery) Prepare(ctx context.Context, t *probes.Target, c *probes.Client) error {
	if l.Path == "" {
		found, err := discoverNoteQuery(c)
		if err != nil {
			return err
		}
		l.Path = found.path
		if len(l.Queries) == 0 {
			l.Queries = l.Known[found.profile]
		}
		if len(l.Queries) == 0 {
			return &probes.NotFound{Microload: "notequery", What: fmt.Sprintf("the server announces a query endpoint at %s in a dialect "+
				"probe has no queries for (profile %s)",
				l.Path, probes.QuoteBounded(found.profile))}
		}
	}
	if len(l.Queries) == 0 {
		return &probes.NotFound{Microload: "notequery", What: "no queries are known for " + l.Path}
	}
	_, err := fetch(c, l.call(t, 0))
	return err
}

func (l *NoteQuery) NewSession(ctx context.Context, c *probes.Client, id int) (probes.Session, error) {
	calls := make([]probes.Call, len(l.Queries))
	for i := range calls {
		calls[i] = l.call(c.Target(), (i+id)%len(l.Queries))
	}
	return probes.StaticSession(calls), nil
}

func (l *NoteQuery) call(t *probes.Target, i int) probes.Call {
	q := l.Queries[i]
	op := strings.TrimSpace("POST " + l.Path + " " + q.Name)
	var req *h1.Request
	if q.Method == "GET" {
		op = strings.TrimSpace("GET " + l.Path + " " + q.Name)
		req = t.Request("GET", withQuery(l.Path, q.RawQuery), nil)
	} else {
		ct := q.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req = t.Request("POST", l.Path, q.Body, h1.Field{Name: "Content-Type", Value: ct})
	}
	return probes.Call{Op: op, Key: q.Key, Req: req, Check: func(r *probes.Reply) error {
		if err := probes.WantStatus(r, 200); err != nil {
			return err
		}
		if strings.Contains(r.Header("Content-Type"), "json") && !json.Valid(r.Body) {
			return fmt.Errorf("query result says it is JSON and is not")
		}
		return nil
	}}
}

func withQuery(path, q string) string {
	if q == "" {
		return path
	}
	if strings.Contains(path, "?") {
		return path + "&" + q
	}
	return path + "?" + q
}
