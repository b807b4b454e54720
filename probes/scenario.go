package probes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/lib/h1"
)

// Scenario is one user's sequence of requests (seed 003: log in, do
// something, log out): named steps, each a request with its checks, and
// values taken from one reply into the next request.
type Scenario struct {
	Name  string
	Steps []Step
	// Values are named values a session draws from, the n-th session the
	// n-th value (cycling): a query word, a user.
	Values map[string][]string
}

// Step is one request of a scenario. Path, Body and header values may hold
// {{name}}: a value of the scenario's Values or one an earlier step
// extracted.
type Step struct {
	Name    string
	Method  string
	Path    string
	Header  []h1.Field
	Body    string
	Check   func(*Reply) error // nil: a status below 400
	Extract []Extract
	// GRPC, when set, makes the step a gRPC call over the target's
	// HTTP/2 in place of Method, Path and Body; its Check and Extract read
	// the reply's messages as JSON.
	GRPC *GRPCStep
}

// GRPCStep is a scenario step's gRPC call.
type GRPCStep struct {
	Method string   // package.Service/Method
	Data   string   // the request message as JSON; {{name}} filled, JSON-escaped
	Proto  []string // .proto files, for a server without reflection
	// Resolve finds Method on the target (probes/grpc's Resolve).
	Resolve GRPCResolver
	m       GRPCMethod
	on      *Target // the target m was resolved on
}

// Prepare resolves the scenario's gRPC methods on t (the server's
// reflection service or the steps' .proto files), once, before a run.
func (s *Scenario) Prepare(ctx context.Context, t *Target) error {
	for i := range s.Steps {
		g := s.Steps[i].GRPC
		if g == nil || g.m != nil && g.on == t {
			continue // each step of a stepped ramp is a run of its own: once is enough
		}
		if g.Resolve == nil {
			return fmt.Errorf("scenario %s: step %s: no resolver for gRPC methods", s.Name, s.Steps[i].Name)
		}
		m, err := g.Resolve(ctx, t, g.Method, g.Proto)
		if err != nil {
			return fmt.Errorf("scenario %s: step %s: %v", s.Name, s.Steps[i].Name, err)
		}
		g.m, g.on = m, t
	}
	return nil
}

// Extract takes a value from a step's reply: one of a JSON path, a header
// or a regexp's first group.
type Extract struct {
	Name   string
	JSON   []any // a parsed JSON path: keys and indexes
	Header string
	Regexp *regexp.Regexp
}

var holeRE = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// holes are the {{names}} of s.
func holes(s string) []string {
	var out []string
	for _, m := range holeRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// Validate says which step refers to a value no earlier step extracts, or
// nil: a scenario must fail before the run, not in it.
func (s *Scenario) Validate() error {
	if len(s.Steps) == 0 {
		return fmt.Errorf("scenario %s: no steps", s.Name)
	}
	known := map[string]bool{}
	for name, vals := range s.Values {
		if len(vals) == 0 {
			return fmt.Errorf("scenario %s: values.%s: no values", s.Name, name)
		}
		for i, v := range vals {
			if len(v) > maxValue {
				return fmt.Errorf("scenario %s: values.%s[%d] %v", s.Name, name, i, errValueTooLong)
			}
		}
		known[name] = true
	}
	if err := s.validateRequests(); err != nil {
		return fmt.Errorf("scenario %s: %v", s.Name, err)
	}
	names := map[string]bool{}
	for i, st := range s.Steps {
		if names[st.Name] {
			return fmt.Errorf("scenario %s: steps[%d]: %q names two steps", s.Name, i, st.Name)
		}
		names[st.Name] = true
		texts := []string{st.Path, st.Body}
		if st.GRPC != nil {
			texts = []string{st.GRPC.Data}
		}
		for _, h := range st.Header {
			texts = append(texts, h.Value)
		}
		for _, t := range texts {
			for _, h := range holes(t) {
				if !known[h] {
					return fmt.Errorf("scenario %s: step %s uses {{%s}}, which no earlier step extracts (and no values name)", s.Name, st.Name, h)
				}
			}
		}
		for _, e := range st.Extract {
			known[e.Name] = true
		}
	}
	return nil
}

// validateRequests says which step's own text (method, path, header) the
// HTTP/1 client would refuse to write, or which of the file's values would
// break a header it is put in: the file's mistake, told before the run.
// Values taken from replies are checked as they come (see runSession).
func (s *Scenario) validateRequests() error {
	for _, st := range s.Steps {
		if err := st.validateTarget(); err != nil {
			return err
		}
		for _, h := range st.Header {
			if reason := h1.CheckToken(h.Name); reason != "" {
				return fmt.Errorf("step %s: header name %q %s", st.Name, h.Name, reason)
			}
			if reason := h1.CheckFieldValue(holeRE.ReplaceAllString(h.Value, "")); reason != "" {
				return fmt.Errorf("step %s: header %s %s", st.Name, h.Name, reason)
			}
			for _, name := range holes(h.Value) {
				for i, v := range s.Values[name] {
					if reason := h1.CheckFieldValue(v); reason != "" {
						return fmt.Errorf("step %s: header %s: values.%s[%d] %s", st.Name, h.Name, name, i, reason)
					}
				}
			}
		}
	}
	return nil
}

// validateTarget says what of the step's method and path (or gRPC
// method) the client would refuse to send.
func (st *Step) validateTarget() error {
	if g := st.GRPC; g != nil {
		if _, _, ok := SplitGRPCMethod(g.Method); !ok {
			return fmt.Errorf("step %s: grpc %q: want package.Service/Method", st.Name, g.Method)
		}
		return nil
	}
	if reason := h1.CheckToken(cmp.Or(st.Method, "GET")); reason != "" {
		return fmt.Errorf("step %s: method %q %s", st.Name, st.Method, reason)
	}
	lit := holeRE.ReplaceAllString(st.Path, "x")
	if reason := h1.CheckTarget(lit); reason != "" {
		return fmt.Errorf("step %s: path %q %s", st.Name, st.Path, reason)
	}
	if p, _, _ := strings.Cut(lit, "?"); climbs(p) != "" {
		return fmt.Errorf("step %s: path %q %s", st.Name, st.Path, climbs(p))
	}
	return nil
}

// fill puts the values into t's holes.
func fill(t string, vals map[string]value, escape func(string) string) string {
	if !strings.Contains(t, "{{") {
		return t
	}
	return holeRE.ReplaceAllStringFunc(t, func(m string) string {
		v := vals[holeRE.FindStringSubmatch(m)[1]].text
		if escape != nil {
			return escape(v)
		}
		return v
	})
}

// escapePathValue escapes a value put into a path or query, but keeps the
// slashes of a value that is itself a path (an id from a list, a hit's
// permalink).
func escapePathValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-._~/:@!$'()*,;=", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// jsonScalar is a value that may stand for itself outside a JSON string.
var jsonScalar = regexp.MustCompile(`^(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?|true|false|null)$`)

// fillJSON puts the values into a JSON template's holes: one inside a
// string gets a JSON string's escapes; one outside must be a number, true,
// false or null, since any other text there (1,2,3 in [{{id}}]) would
// change the document's shape, not a value of it.
func fillJSON(t string, vals map[string]value) (string, error) {
	var b strings.Builder
	inString, escaped, last := false, false, 0
	for _, m := range holeRE.FindAllStringSubmatchIndex(t, -1) {
		for _, c := range []byte(t[last:m[0]]) {
			switch {
			case escaped:
				escaped = false
			case c == '\\' && inString:
				escaped = true
			case c == '"':
				inString = !inString
			}
		}
		b.WriteString(t[last:m[0]])
		v := vals[t[m[2]:m[3]]]
		switch {
		case inString:
			b.WriteString(escapeJSONValue(v.text))
		case jsonScalar.MatchString(v.text):
			b.WriteString(v.text)
		default:
			return "", fmt.Errorf("{{%s}} from %s stands outside a JSON string and is not a number, true, false or null: %s",
				t[m[2]:m[3]], v.from, QuoteBounded(v.text))
		}
		last = m[1]
	}
	b.WriteString(t[last:])
	return b.String(), nil
}

// escapeJSONValue escapes a value put into a JSON string.
func escapeJSONValue(v string) string {
	b, _ := json.Marshal(v)
	return string(b[1 : len(b)-1])
}

// call is step i of session n, its holes filled; an error is a value that
// cannot go where the step puts it (nothing is sent).
func (s *Scenario) call(t *Target, i int, vals map[string]value, maxBody int) (Call, error) {
	st := s.Steps[i]
	if st.GRPC != nil {
		return s.grpcCall(t, i, vals, maxBody)
	}
	path, err := fillPath(st.Path, vals, t)
	if err != nil {
		return Call{}, err
	}
	isJSON := strings.HasPrefix(strings.TrimSpace(st.Body), "{") || strings.HasPrefix(strings.TrimSpace(st.Body), "[")
	var header []h1.Field
	for _, h := range st.Header {
		header = append(header, h1.Field{Name: h.Name, Value: fill(h.Value, vals, nil)})
	}
	var body []byte
	switch {
	case isJSON:
		b, err := fillJSON(st.Body, vals)
		if err != nil {
			return Call{}, err
		}
		body = []byte(b)
	case st.Body != "":
		body = []byte(fill(st.Body, vals, nil))
	}
	check := st.Check
	if check == nil {
		check = statusBelow400
	}
	return Call{Op: s.Name + "/" + st.Name, Key: s.Name + "/" + st.Name,
		Req: t.Request(cmp.Or(st.Method, "GET"), path, body, header...), Check: check,
		Read: len(st.Extract) > 0}, nil
}

// refused names the value behind a request the HTTP/1 client refused to
// write (a CR LF from a reply in a header value), or says it as it is.
func (st *Step) refused(err *h1.RequestError, vals map[string]value) error {
	if name, ok := strings.CutPrefix(err.Part, "header "); ok {
		for _, h := range st.Header {
			if !strings.EqualFold(h.Name, name) {
				continue
			}
			for _, hole := range holes(h.Value) {
				if reason := h1.CheckFieldValue(vals[hole].text); reason != "" {
					return fmt.Errorf("not sent: {{%s}} from %s %s (header %s)", hole, vals[hole].from, reason, h.Name)
				}
			}
		}
	}
	return err
}

// extract takes step i's values from its reply into vals: each within
// maxValue, the JSON ones all from one pass over the reply.
func (st *Step) extract(ctx context.Context, r *Reply, vals map[string]value) error {
	var wants []*jsonWant
	for _, e := range st.Extract {
		if e.Header == "" && e.Regexp == nil {
			wants = append(wants, &jsonWant{path: e.JSON})
		}
	}
	var jsonErr error
	if len(wants) > 0 {
		if jsonErr = scanJSON(ctx, r.Body, wants); ctx.Err() != nil {
			return ctx.Err()
		}
	}
	from := "the reply of step " + st.Name
	next := 0
	for _, e := range st.Extract {
		var v string
		switch {
		case e.Header != "":
			v = r.Header(e.Header)
		case e.Regexp != nil:
			// The first group, else the whole match; measured before it
			// is copied out of the reply.
			m := e.Regexp.FindSubmatchIndex(r.Body)
			if len(m) >= 4 {
				m = m[2:4] // -1, -1 when the group took no part: no value
			}
			if len(m) == 2 && m[0] >= 0 {
				if m[1]-m[0] > maxValue {
					return fmt.Errorf("%s: the value %v", e.Name, errValueTooLong)
				}
				v = string(r.Body[m[0]:m[1]])
			}
		default:
			w := wants[next]
			next++
			if !w.found {
				if jsonErr != nil {
					return fmt.Errorf("%s: the reply is not JSON", e.Name)
				}
				return fmt.Errorf("%s: the reply has no such value", e.Name)
			}
			var err error
			if v, err = jsonText(w.raw); err != nil {
				return fmt.Errorf("%s: the reply's value %v", e.Name, err)
			}
		}
		if v == "" {
			return fmt.Errorf("%s: nothing to extract from the reply", e.Name)
		}
		if len(v) > maxValue {
			return fmt.Errorf("%s: the value %v", e.Name, errValueTooLong)
		}
		vals[e.Name] = value{text: v, from: from}
	}
	return nil
}

// StepTime is how one step of one session went.
type StepTime struct {
	Step    int
	Latency time.Duration // from the step's send to its reply
	Err     error
}

// runSession runs session n of s on c: the steps in order, each reply's
// values into the next requests. It stops at the first failed step.
func (s *Scenario) runSession(ctx context.Context, c *Client, n int, record func(StepTime)) error {
	// The run's end interrupts a request in flight: a ramp told to stop
	// does not wait for a slow or endless reply.
	defer context.AfterFunc(ctx, c.conn.Interrupt)()
	vals := map[string]value{}
	for name, vs := range s.Values {
		vals[name] = value{text: vs[n%len(vs)], from: "values." + name}
	}
	for i := range s.Steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		op := s.Name + "/" + s.Steps[i].Name
		call, err := s.call(c.target, i, vals, c.maxBody)
		if err != nil {
			record(StepTime{Step: i, Err: err})
			return fmt.Errorf("%s: not sent: %v", op, err)
		}
		sent := time.Now()
		r, err := c.do(call, time.Time{}, false)
		latency := time.Since(sent) // the reply's, not the extraction's after it
		var re *h1.RequestError
		switch {
		case errors.As(err, &re):
			err = s.Steps[i].refused(re, vals)
		case err == nil && s.Steps[i].GRPC != nil && len(s.Steps[i].Extract) > 0:
			if r, err = s.Steps[i].GRPC.m.JSONReply(r, c.maxBody); err == nil {
				err = s.Steps[i].extract(ctx, r, vals)
			}
			if err != nil {
				err = fmt.Errorf("extract %v", err)
			}
		case err == nil:
			if err = s.Steps[i].extract(ctx, r, vals); err != nil {
				err = fmt.Errorf("extract %v", err)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		record(StepTime{Step: i, Latency: latency, Err: err})
		if err != nil {
			return fmt.Errorf("%s: %v", op, err)
		}
	}
	return nil
}

// ParseJSONPath reads a.b[0].c into steps: keys and indexes.
func ParseJSONPath(p string) ([]any, error) {
	if p == "" {
		return nil, nil
	}
	var steps []any
	for _, part := range strings.Split(p, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			steps = append(steps, key)
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			n, err := strconv.Atoi(idx)
			if !ok || err != nil || n < 0 {
				return nil, fmt.Errorf("json path %q: want keys and [n] indexes", p)
			}
			steps = append(steps, n)
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return steps, nil
}

// JSONAt is the value of doc at a parsed path, and whether it is there.
func JSONAt(doc any, steps []any) (any, bool) {
	for _, s := range steps {
		switch k := s.(type) {
		case string:
			m, ok := doc.(map[string]any)
			if !ok {
				return nil, false
			}
			if doc, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := doc.([]any)
			if !ok || k >= len(l) {
				return nil, false
			}
			doc = l[k]
		}
	}
	return doc, doc != nil
}
