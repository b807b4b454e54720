package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/mcp"
)

// A request whose input is a JSON body (a JSON POST, a JSON-RPC call, an
// MCP tools/call) is varied in the body's own terms (DESIGN.md, the
// experiment): its inputs are the body's members, each a string, number
// or boolean named by its path (`arguments.lang` of an MCP call's
// arguments, `params.id` of another JSON-RPC call's params, `body.q` of a
// plain JSON body). The control adds a member of probe's own where the
// inputs are (ignored-field); other-value sends each string and number
// with another value, one the user's other requests hold at that path,
// else one probe makes of it. A JSON-RPC server refuses a call with a
// 200: its error, or an MCP result with isError, makes the variant void.

// maxBodyInputs bounds the body's inputs named and varied; maxBodyDepth,
// how deep they are looked for.
const (
	maxBodyInputs = 32
	maxBodyDepth  = 8
)

// jsonBody is a request's JSON body, parsed, and where its inputs are.
type jsonBody struct {
	doc     map[string]any
	inputs  map[string]any // the object holding the inputs (doc itself, params, params.arguments)
	prefix  string         // the inputs' names begin with it: "arguments", "params", "body"
	jsonRPC bool
}

// parseJSONBody reads a JSON object body; ok is false for any other body.
func parseJSONBody(body []byte) (jsonBody, bool) {
	var jb jsonBody
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' {
		return jb, false
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber() // a number is sent back as it came
	if dec.Decode(&jb.doc) != nil || dec.More() {
		return jb, false
	}
	jb.inputs, jb.prefix = jb.doc, "body"
	if _, ok := jb.doc["jsonrpc"]; !ok {
		return jb, true
	}
	jb.jsonRPC = true
	params, ok := jb.doc["params"].(map[string]any)
	if !ok {
		params = map[string]any{}
		jb.doc["params"] = params
	}
	jb.inputs, jb.prefix = params, "params"
	if jb.doc["method"] == "tools/call" {
		args, ok := params["arguments"].(map[string]any)
		if !ok {
			args = map[string]any{}
			params["arguments"] = args
		}
		jb.inputs, jb.prefix = args, "arguments"
	}
	return jb, true
}

// requestBody is the body of a request's text ("METHOD path body"), as a
// digest keeps it.
func requestBody(text string) []byte {
	_, rest, _ := strings.Cut(text, " ")
	_, body, _ := strings.Cut(rest, " ")
	return []byte(body)
}

// bodyInput is one input of a JSON body: its name, its place (object
// members and array indexes) under the inputs' object, and its value.
type bodyInput struct {
	name  string
	steps []any
	value any
}

// leaves are the body's inputs in order of their names, at most
// maxBodyInputs.
func (jb jsonBody) leaves() []bodyInput {
	var out []bodyInput
	var walk func(v any, name string, steps []any, depth int)
	walk = func(v any, name string, steps []any, depth int) {
		if len(out) == maxBodyInputs || depth > maxBodyDepth {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k], name+"."+k, append(slices.Clip(steps), k), depth+1)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", name, i), append(slices.Clip(steps), i), depth+1)
			}
		case nil:
		default:
			out = append(out, bodyInput{name: name, steps: steps, value: x})
		}
	}
	inputs := jb.inputs
	if _, ok := inputs["_meta"]; ok && jb.jsonRPC {
		// A JSON-RPC call's _meta is the protocol's, as the transport's
		// headers are: MCP's protocol version (one per lane), the client's
		// name and capabilities (the same for every client of a kind).
		inputs = maps.Clone(inputs)
		delete(inputs, "_meta")
	}
	walk(inputs, jb.prefix, nil, 0)
	return out
}

// names are the inputs' names.
func inputNames(ins []bodyInput) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.name
	}
	return out
}

// set puts v at steps under the inputs' object.
func (jb jsonBody) set(steps []any, v any) {
	var at any = jb.inputs
	for i, s := range steps {
		last := i == len(steps)-1
		switch c := at.(type) {
		case map[string]any:
			if last {
				c[s.(string)] = v
			}
			at = c[s.(string)]
		case []any:
			if last {
				c[s.(int)] = v
			}
			at = c[s.(int)]
		}
	}
}

// encode is the body with its changes, as JSON.
func (jb jsonBody) encode() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(jb.doc) != nil {
		return nil
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// withBody is r with another body.
func withBody(r *h1.Request, body []byte) *h1.Request {
	return h1.NewRequest(r.Method, r.Path, body, r.Header...)
}

// withIgnoredMember is r with a member of probe's own (probe-experiment:
// 1) where its body's inputs are; nil when r's body is no JSON object.
func withIgnoredMember(r *h1.Request) *h1.Request {
	jb, ok := parseJSONBody(r.Body)
	if !ok {
		return nil
	}
	jb.inputs[IgnoredParam] = json.Number("1")
	if b := jb.encode(); b != nil {
		return withBody(r, b)
	}
	return nil
}

// otherValues are, by input name, the values the user's other requests
// hold where base holds another of the same kind (a string for a string,
// a number for a number): the first found.
func otherValues(base jsonBody, others [][]byte) map[string]any {
	out := map[string]any{}
	for _, o := range others {
		ob, ok := parseJSONBody(o)
		if !ok || ob.prefix != base.prefix {
			continue
		}
		theirs := map[string]any{}
		for _, in := range ob.leaves() {
			theirs[in.name] = in.value
		}
		for _, in := range base.leaves() {
			v, ok := theirs[in.name]
			if _, seen := out[in.name]; seen || !ok || v == in.value || kindOf(v) != kindOf(in.value) {
				continue
			}
			out[in.name] = v
		}
	}
	return out
}

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	}
	return ""
}

// anotherValue is the value probe sends in place of v: a string of the
// same shape (each letter the next, z to a, each digit the next, 9 to 0:
// a pattern a server checks still holds), an integer plus one, another
// number doubled; ok is false for what probe does not vary (a boolean).
func anotherValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		out := []byte(x)
		for i, c := range out {
			switch {
			case c >= 'a' && c <= 'z':
				out[i] = 'a' + (c-'a'+1)%26
			case c >= 'A' && c <= 'Z':
				out[i] = 'A' + (c-'A'+1)%26
			case c >= '0' && c <= '9':
				out[i] = '0' + (c-'0'+1)%10
			}
		}
		if string(out) == x {
			out = append(out, 'x')
		}
		return string(out), true
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return json.Number(strconv.FormatInt(n+1, 10)), true
		}
		if f, err := x.Float64(); err == nil {
			if f == 0 {
				return json.Number("1"), true
			}
			return json.Number(strconv.FormatFloat(2*f, 'g', -1, 64)), true
		}
	}
	return nil, false
}

// withOtherValues alters a request's JSON body: each string and number
// input another value (theirs: the user's other requests' values by
// name), the rest as sent. It also says which inputs it varied.
func withOtherValues(theirs map[string]any) func(*h1.Request) *h1.Request {
	return func(r *h1.Request) *h1.Request {
		jb, ok := parseJSONBody(r.Body)
		if !ok {
			return nil
		}
		changed := false
		for _, in := range jb.leaves() {
			v, ok := theirs[in.name]
			if !ok {
				if v, ok = anotherValue(in.value); !ok {
					continue
				}
			}
			jb.set(in.steps, v)
			changed = true
		}
		if !changed {
			return nil
		}
		if b := jb.encode(); b != nil {
			return withBody(r, b)
		}
		return nil
	}
}

// variedBy are the inputs other-value varies of base: its strings and
// numbers.
func variedBy(base jsonBody) []string {
	var out []string
	for _, in := range base.leaves() {
		if kindOf(in.value) != "" {
			out = append(out, in.name)
		}
	}
	return out
}

// differingBodyInputs are the inputs whose values differ between two JSON
// bodies (an other key's), by name; nil when either is no JSON object.
func differingBodyInputs(a, b []byte) []string {
	ja, ok1 := parseJSONBody(a)
	jb, ok2 := parseJSONBody(b)
	if !ok1 || !ok2 || ja.prefix != jb.prefix {
		return nil
	}
	theirs := map[string]any{}
	for _, in := range jb.leaves() {
		theirs[in.name] = in.value
	}
	var out []string
	for _, in := range ja.leaves() {
		if v, ok := theirs[in.name]; ok && v != in.value {
			out = append(out, in.name)
		}
	}
	return out
}

// shownValues are the values a varied body holds at the inputs named,
// as the report shows them: `arguments.lang = "fo"`.
func shownValues(body []byte, names []string) string {
	jb, ok := parseJSONBody(body)
	if !ok {
		return ""
	}
	var parts []string
	for _, in := range jb.leaves() {
		if !slices.Contains(names, in.name) {
			continue
		}
		b, _ := json.Marshal(in.value)
		s := string(b)
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		parts = append(parts, in.name+" = "+s)
	}
	return strings.Join(parts, ", ")
}

// refusedRPC chains a JSON-RPC call's check with its refusal: a JSON-RPC
// error or an MCP tool result with isError fails the call, as a status
// of 400 does.
func refusedRPC(check func(*probes.Reply) error) func(*probes.Reply) error {
	return func(r *probes.Reply) error {
		if check != nil {
			if err := check(r); err != nil {
				return err
			}
		} else if r.Status/100 != 2 {
			return fmt.Errorf("status %d", r.Status)
		}
		return mcp.JSONRPCRefusal(r)
	}
}
