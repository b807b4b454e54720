package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/fuzz"
	"github.com/probehq/probe/result"
)

// FuzzServer is what `probe fuzz mcp` learns of an MCP server before it
// fuzzes: the lane it speaks, its endpoint and the tools it lists.
type FuzzServer struct {
	Lane  Lane
	Path  string
	Tools []ToolSchema
}

// maxToolPages bounds the pages of tools/list read: a server whose cursor
// never ends must not keep probe listing.
const maxToolPages = 100

// maxToolsListed bounds the bytes of the tools kept over all the pages of
// tools/list (each page is bounded as a reply is: a server whose every
// page holds a reply's worth of schemas would have probe keep a hundred).
const maxToolsListed = 16 << 20

// ToolSchema is a tool as tools/list names it.
type ToolSchema struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// ListToolsToFuzz negotiates the lane of the MCP server at base (a URL)
// on path, as the loads do, and lists its tools (following nextCursor,
// for up to maxToolPages pages).
func ListToolsToFuzz(base, path string, timeout time.Duration) (*FuzzServer, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	c := probes.NewClient(&probes.Target{URL: u}, timeout)
	defer c.Close()
	ln, err := prepareLane(c, path, nil)
	if err != nil {
		return nil, err
	}
	headers, err := openMCP(c, path, -1, ln, nil)
	if err != nil {
		return nil, err
	}
	s := &FuzzServer{Lane: ln, Path: path}
	cursor, size := "", 0
	for page := 0; page == 0 || cursor != "" && page < maxToolPages; page++ {
		params := ""
		if cursor != "" {
			params = `"cursor":` + jsonText(cursor)
		}
		list := probes.Call{Op: "tools/list", Key: "tools/list",
			Req: post(c.Target(), path, ln.body(2+page, "tools/list", params), ln.headers(headers, "tools/list", "")...),
			Check: checkJSONRPC(func(r json.RawMessage) error {
				var listed struct {
					Tools      []ToolSchema `json:"tools"`
					NextCursor string       `json:"nextCursor"`
				}
				if err := json.Unmarshal(r, &listed); err != nil {
					return fmt.Errorf("tools/list result: %v", err)
				}
				for _, tool := range listed.Tools {
					if size += len(tool.Name) + len(tool.InputSchema); size > maxToolsListed {
						return fmt.Errorf("the server lists over %d MiB of tools and input schemas", maxToolsListed>>20)
					}
				}
				s.Tools, cursor = append(s.Tools, listed.Tools...), listed.NextCursor
				return nil
			})}
		if _, err := c.Unmeasured(list); err != nil {
			return nil, fmt.Errorf("MCP tools/list: %v", err)
		}
	}
	if len(s.Tools) == 0 {
		return nil, fmt.Errorf("MCP tools/list: the server lists no tools")
	}
	return s, nil
}

// OpenSession opens a session of the session lane on the server at base
// and returns the header its requests carry (its id, when the server names
// one, and the protocol's version); nil in the stateless lane, whose
// requests carry all they need. A restarted server knows no earlier
// session. It speaks net/http, as the fuzzer does, and reads an event
// stream only to its reply (FuzzReplyWhole): a server may keep it open.
func (s *FuzzServer) OpenSession(base string, timeout time.Duration) (http.Header, error) {
	if s.Lane.Stateless {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	initialize, initialized := SessionOpening()
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	status, reply, body, err := postFuzz(ctx, base+s.Path, h, initialize)
	if err != nil {
		return nil, fmt.Errorf("MCP initialize: %v", err)
	}
	var version string
	check := checkJSONRPC(func(result json.RawMessage) error {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(result, &r)
		version = r.ProtocolVersion
		return nil
	})
	if err := check(&probes.Reply{Status: status, Header: reply.Get, Body: body}); err != nil {
		return nil, fmt.Errorf("MCP initialize: %v", err)
	}
	opened := http.Header{"Mcp-Protocol-Version": {version}}
	if sid := reply.Get("Mcp-Session-Id"); sid != "" {
		opened.Set("Mcp-Session-Id", sid)
	}
	for k, v := range opened {
		h[k] = v
	}
	if status, _, _, err = postFuzz(ctx, base+s.Path, h, initialized); err != nil || status != 202 && status != 200 {
		return nil, fmt.Errorf("MCP notifications/initialized: status %d %v", status, err)
	}
	return opened, nil
}

// postFuzz posts body to url and reads the reply until it is whole.
func postFuzz(ctx context.Context, url string, h http.Header, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header = h.Clone()
	// No redirect is followed (lib/redirect's policy): the session's
	// opening goes to the server fuzzed, nowhere its reply points.
	resp, err := (&http.Client{CheckRedirect: redirect.Refuse("the MCP session's opening")}).Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var got []byte
	chunk := make([]byte, 32<<10)
	whole := FuzzReplyWhole(resp.Header)
	for len(got) < maxToolArguments {
		n, err := resp.Body.Read(chunk)
		got = append(got, chunk[:n]...)
		if err == io.EOF || n > 0 && whole != nil && whole(chunk[:n]) {
			break
		}
		if err != nil {
			return 0, nil, nil, err
		}
	}
	return resp.StatusCode, resp.Header, got, nil
}

// FuzzRefusal is why a whole reply refuses a tools/call: a JSON-RPC error
// or a tool result with isError, the server saying no to bad input; ""
// for any other reply, JSON-RPC or not (an event stream read as the
// loads read it).
func FuzzRefusal(status int, header http.Header, body []byte) string {
	r := &probes.Reply{Status: status, Header: header.Get, Body: body}
	if err := JSONRPCRefusal(r); err != nil {
		return err.Error()
	}
	return ""
}

// Skipped is a tool listed but not fuzzed, and why.
type Skipped struct{ Tool, Why string }

// FuzzTemplates are the tools/call templates of the tools named (all when
// none is): per tool, its arguments with every property of its input
// schema a hole, and, when some are optional, one of the required ones
// alone. A name the server does not list is an error; a tool without
// arguments is skipped.
func (s *FuzzServer) FuzzTemplates(only []string) ([]*fuzz.Template, []Skipped, error) {
	listed := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		listed[i] = t.Name
	}
	for _, name := range only {
		if !slices.Contains(listed, name) {
			return nil, nil, fmt.Errorf("--tool %s: the server lists no such tool (it lists: %s)", textline.Of(name, 80),
				orNone(textline.Names(listed, 200)))
		}
	}
	var out []*fuzz.Template
	var skipped []Skipped
	for _, tool := range s.Tools {
		if len(only) > 0 && !slices.Contains(only, tool.Name) {
			continue
		}
		ts, why := s.toolTemplates(tool)
		if why != "" {
			skipped = append(skipped, Skipped{Tool: textline.Of(tool.Name, 80), Why: why}) // the server's text, said
			continue
		}
		out = append(out, ts...)
	}
	if len(out) == 0 {
		var whys []string
		for _, sk := range skipped {
			whys = append(whys, sk.Tool+": "+sk.Why)
		}
		return nil, skipped, fmt.Errorf("no tool to fuzz: %s", textline.Of(strings.Join(whys, "; "), 300))
	}
	return out, skipped, nil
}

// argument is one property of a tool's input schema as a template
// fragment: its value, with holes where the schema has leaves.
type argument struct {
	name     string
	value    string   // the fragment
	holes    []string // its holes' names, in order
	required bool
}

// toolTemplates are a tool's templates, or why it has none.
func (s *FuzzServer) toolTemplates(tool ToolSchema) ([]*fuzz.Template, string) {
	if s.Lane.Stateless && strings.ContainsAny(tool.Name, "{}") {
		return nil, "its name holds { or }, which would read as a hole in the Mcp-Name header"
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
		return nil, "its input schema is not a JSON object: " + textline.Of(err.Error(), 100)
	}
	if len(schema.Properties) == 0 {
		return nil, "its input schema has no properties: no argument to fuzz"
	}
	var all, required []argument
	for _, name := range sortedKeys(schema.Properties) {
		a := argument{name: name, required: slices.Contains(schema.Required, name)}
		a.value = valueShape(schema.Properties[name], "the argument "+textline.Of(name, 80), 0, &a.holes)
		all = append(all, a)
		if a.required {
			required = append(required, a)
		}
	}
	t, err := s.template(tool.Name, all)
	if err != nil {
		return nil, err.Error()
	}
	out := []*fuzz.Template{t}
	if len(required) > 0 && len(required) < len(all) {
		if t, err := s.template(tool.Name, required); err == nil {
			out = append(out, t)
		}
	}
	return out, ""
}

// sortedKeys are m's keys in order: a map's order is random, and the same
// seed must draw the same inputs.
func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// maxShapeDepth bounds how deep valueShape follows arrays and objects.
const maxShapeDepth = 4

// valueShape is a value of a JSON schema as a template fragment: a hole
// of the kind a leaf's type implies (integers and numbers the numeric
// hole, strings the string hole; booleans and values of no one type a
// JSON value, whose pool holds true, false and every type a handler does
// not expect), and an array of a described item or an object of described
// properties as that structure with holes inside (every property present),
// so that values pass the server's schema check and reach the tool's own
// code. Each hole's name, below name, is appended to holes in order.
func valueShape(schema json.RawMessage, name string, depth int, holes *[]string) string {
	var p struct {
		Type       json.RawMessage            `json:"type"`
		Items      json.RawMessage            `json:"items"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &p)
	var types []string
	var one string
	if json.Unmarshal(p.Type, &one) == nil {
		types = []string{one}
	} else {
		_ = json.Unmarshal(p.Type, &types)
	}
	types = slices.DeleteFunc(types, func(t string) bool { return t == "null" })
	kind := fuzz.JSON
	if len(types) == 1 {
		switch {
		case types[0] == "integer" || types[0] == "number":
			kind = fuzz.Int
		case types[0] == "string":
			kind = fuzz.Str
		case types[0] == "array" && len(p.Items) > 0 && depth < maxShapeDepth:
			return "[" + valueShape(p.Items, name+"[0]", depth+1, holes) + "]"
		case types[0] == "object" && len(p.Properties) > 0 && depth < maxShapeDepth:
			var b strings.Builder
			b.WriteByte('{')
			for i, k := range sortedKeys(p.Properties) {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(jsonText(k) + ":" + valueShape(p.Properties[k], name+"."+textline.Of(k, 40), depth+1, holes))
			}
			b.WriteByte('}')
			return b.String()
		}
	}
	*holes = append(*holes, name)
	return "{" + string(kind) + "}"
}

// template is the tools/call of tool with args as holes, on the lane.
func (s *FuzzServer) template(tool string, args []argument) (*fuzz.Template, error) {
	var b strings.Builder
	b.WriteByte('{')
	var holeNames []string
	for i, a := range args {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonText(a.name) + ":" + a.value)
		holeNames = append(holeNames, a.holes...)
	}
	b.WriteByte('}')
	body := s.Lane.body(2, "tools/call", fmt.Sprintf(`"name":%s,"arguments":%s`, jsonText(tool), b.String()))
	var header []result.FuzzField
	for _, f := range s.callHeader(tool) {
		header = append(header, result.FuzzField{Name: f.Name, Value: f.Value})
	}
	t, err := fuzz.NewTemplate("POST", s.Path, header, string(body))
	if err != nil {
		return nil, err
	}
	// The server's name for its tool is said in the report and on the
	// terminal: as text, no control character in it.
	t.Endpoint, t.HoleNames = "tools/call "+textline.Of(tool, 80), holeNames
	return t, nil
}

// callHeader are a tools/call's fields in the lane, but the session's.
func (s *FuzzServer) callHeader(tool string) []h1.Field {
	base := baseHeaders(nil)
	if s.Lane.Stateless {
		base = append(base, h1.Field{Name: "Mcp-Protocol-Version", Value: s.Lane.Version})
	}
	return s.Lane.headers(base, "tools/call", tool)
}

// braces are text the fuzz templates would read as a hole.
var braces = regexp.MustCompile(`[{}]`)

// jsonText is s as a JSON string whose braces are escaped, so that a name
// such as "{int}" stays a name and not a hole of the template.
func jsonText(s string) string {
	q, _ := json.Marshal(s)
	return braces.ReplaceAllStringFunc(string(q), func(b string) string { return fmt.Sprintf(`\u%04x`, b[0]) })
}

// fuzzCallID is the JSON-RPC id every fuzz template's body holds, first.
var fuzzCallID = []byte(`{"jsonrpc":"2.0","id":2,`)

// FuzzRequestID gives a tools/call body of the fuzz templates the id n, so
// that no two requests in flight in one session share an id (the SDK
// refuses the second with 400).
func FuzzRequestID(body []byte, n uint64) []byte {
	rest, ok := bytes.CutPrefix(body, fuzzCallID)
	if !ok {
		return body
	}
	return append(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,`, n), rest...)
}

// SessionOpening are the bodies that open a session of the session lane,
// initialize and notifications/initialized, as probe sends them: for the
// reproductions, which need a session of their own.
func SessionOpening() (initialize, initialized []byte) {
	return Lane{}.body(1, "initialize", fmt.Sprintf(`"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"probe",`+
		`"version":"0.1"}`, sessionVersion)), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
}

// FuzzReplyWhole is the watch of a reply with header (nil unless it is
// an event stream): told the body as it comes, each byte once, it says
// when the stream holds its JSON-RPC result or error in a whole event (a
// server may keep the stream open after it, and the fuzzer must not count
// the wait as a hang). It reads as the loads' watch does (watchRPCReply):
// the body is not read again at each line, which cost a stream of many
// small events its length squared.
func FuzzReplyWhole(header http.Header) func(more []byte) bool {
	if !strings.Contains(header.Get("Content-Type"), "text/event-stream") {
		return nil
	}
	return watchRPCReply()
}
