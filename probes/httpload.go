package probes

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"probe/probes/h1"
)

// HTTP loads any endpoint of any server. With Param set, each request puts
// one of Values into that query parameter, in turn, and the value is the
// request key for reply digests.
type HTTP struct {
	Method string
	Path   string
	Header []h1.Field
	Body   []byte
	Param  string
	Values []string
}

// ParseParam reads a varied parameter: name=v1,v2,….
func ParseParam(s string) (name string, values []string, err error) {
	name, list, ok := strings.Cut(s, "=")
	if !ok || name == "" || list == "" {
		return "", nil, fmt.Errorf("%q: want name=v1,v2,…", s)
	}
	for _, v := range strings.Split(list, ",") {
		values = append(values, v)
	}
	return name, values, nil
}

// ParseHeader reads a header line "Name: value".
func ParseHeader(s string) (h1.Field, error) {
	k, v, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\r\n") || strings.ContainsAny(v, "\r\n") {
		return h1.Field{}, fmt.Errorf("%q: want Name:value", s)
	}
	return h1.Field{Name: k, Value: strings.TrimSpace(v)}, nil
}

func (*HTTP) Name() string { return "http" }

func (l *HTTP) Prepare(ctx context.Context, t *Target, c *Client) error {
	if !strings.HasPrefix(l.Path, "/") {
		return fmt.Errorf("path %q must start with /", l.Path)
	}
	_, err := url.ParseRequestURI(l.Path)
	if err != nil {
		return fmt.Errorf("path %q: %v", l.Path, err)
	}
	return nil
}

func (l *HTTP) NewSession(ctx context.Context, c *Client, id int) (Session, error) {
	method := l.Method
	if method == "" {
		method = "GET"
	}
	op := method + " " + strings.SplitN(l.Path, "?", 2)[0]
	if l.Param == "" {
		return staticSession{{Op: op, Key: l.Path, Req: c.Target().Request(method, l.Path, l.Body, l.Header...), Check: statusBelow400}}, nil
	}
	calls := make([]Call, len(l.Values))
	for i, v := range l.Values {
		u, _ := url.ParseRequestURI(l.Path)
		q := u.Query()
		q.Set(l.Param, v)
		u.RawQuery = q.Encode()
		calls[(i+id)%len(calls)] = Call{Op: op, Key: l.Param + "=" + v, Req: c.Target().Request(method, u.RequestURI(), l.Body, l.Header...), Check: statusBelow400}
	}
	return staticSession(calls), nil
}

func statusBelow400(r *Reply) error {
	if r.Status >= 400 {
		return fmt.Errorf("status %d", r.Status)
	}
	return nil
}
