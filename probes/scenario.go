package probes

import (
	"context"
	"encoding/json"
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
		known[name] = true
	}
	names := map[string]bool{}
	for i, st := range s.Steps {
		if names[st.Name] {
			return fmt.Errorf("scenario %s: steps[%d]: %q names two steps", s.Name, i, st.Name)
		}
		names[st.Name] = true
		texts := []string{st.Path, st.Body}
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

// fill puts the values into t's holes.
func fill(t string, vals map[string]string, escape func(string) string) string {
	if !strings.Contains(t, "{{") {
		return t
	}
	return holeRE.ReplaceAllStringFunc(t, func(m string) string {
		v := vals[holeRE.FindStringSubmatch(m)[1]]
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

// escapeJSONValue escapes a value put into a JSON string.
func escapeJSONValue(v string) string {
	b, _ := json.Marshal(v)
	return string(b[1 : len(b)-1])
}

// call is step i of session n, its holes filled.
func (s *Scenario) call(t *Target, i int, vals map[string]string) Call {
	st := s.Steps[i]
	path := fill(st.Path, vals, escapePathValue)
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") { // an extracted absolute link
		if j := strings.Index(path[8:], "/"); j >= 0 {
			path = path[8+j:]
		} else {
			path = "/"
		}
	}
	escape := (func(string) string)(nil)
	if strings.HasPrefix(strings.TrimSpace(st.Body), "{") || strings.HasPrefix(strings.TrimSpace(st.Body), "[") {
		escape = escapeJSONValue
	}
	var header []h1.Field
	for _, h := range st.Header {
		header = append(header, h1.Field{Name: h.Name, Value: fill(h.Value, vals, nil)})
	}
	var body []byte
	if st.Body != "" {
		body = []byte(fill(st.Body, vals, escape))
	}
	check := st.Check
	if check == nil {
		check = statusBelow400
	}
	return Call{Op: s.Name + "/" + st.Name, Key: s.Name + "/" + st.Name, Req: t.Request(st.Method, path, body, header...), Check: check,
		Read: len(st.Extract) > 0}
}

// extract takes step i's values from its reply into vals.
func (st *Step) extract(r *Reply, vals map[string]string) error {
	for _, e := range st.Extract {
		var v string
		switch {
		case e.Header != "":
			v = r.Header(e.Header)
		case e.Regexp != nil:
			if m := e.Regexp.FindSubmatch(r.Body); len(m) > 1 {
				v = string(m[1])
			} else if len(m) == 1 {
				v = string(m[0])
			}
		default:
			var doc any
			if err := json.Unmarshal(r.Body, &doc); err != nil {
				return fmt.Errorf("%s: the reply is not JSON", e.Name)
			}
			x, ok := JSONAt(doc, e.JSON)
			if !ok {
				return fmt.Errorf("%s: the reply has no such value", e.Name)
			}
			switch y := x.(type) {
			case string:
				v = y
			case float64:
				v = strconv.FormatFloat(y, 'f', -1, 64)
			case bool:
				v = strconv.FormatBool(y)
			default:
				b, _ := json.Marshal(y)
				v = string(b)
			}
		}
		if v == "" {
			return fmt.Errorf("%s: nothing to extract from the reply", e.Name)
		}
		vals[e.Name] = v
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
	vals := map[string]string{}
	for name, vs := range s.Values {
		vals[name] = vs[n%len(vs)]
	}
	for i := range s.Steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		call := s.call(c.target, i, vals)
		sent := time.Now()
		r, err := c.do(call, time.Time{}, false)
		if err == nil {
			if err = s.Steps[i].extract(r, vals); err != nil {
				err = fmt.Errorf("extract %v", err)
			}
		}
		record(StepTime{Step: i, Latency: time.Since(sent), Err: err})
		if err != nil {
			return fmt.Errorf("%s: %v", call.Op, err)
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
