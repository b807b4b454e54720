package pipeline

import (
	"slices"
	"strings"
	"testing"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
)

const toolCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"catalog","arguments":{"lang":"en","n":40,"deep":{"tags":["a1"]},"verbose":true}}}`

// An MCP tools/call is varied in its arguments: the control adds a member
// of probe's own to them, other-value sends each string and number with
// another value (the user's other request's where it has one), and the
// inputs a claim needs varied are the arguments, by name.
func TestExperimentVariesAToolCallsArguments(t *testing.T) {
	base := &result.Digest{Key: "k1", Op: "tools/call catalog", Request: "POST /mcp " + toolCall, Input: true, BodyBytes: len(toolCall)}
	other := strings.Replace(toolCall, `"lang":"en"`, `"lang":"de"`, 1)
	others := []result.Digest{{Key: "k2", Op: base.Op, Request: "POST /mcp " + other, Input: true}}
	vs := requestVariants(base, others, false)
	var names []string
	for _, v := range vs {
		names = append(names, v.name)
		if !v.jsonRPC {
			t.Errorf("%s is not checked for JSON-RPC refusals", v.name)
		}
	}
	if got := strings.Join(names, " "); got != "same-key ignored-field other-key-1 other-value other-header" {
		t.Fatalf("variants %s", got)
	}
	if got := strings.Join(vs[2].varies, ","); got != "arguments.lang" {
		t.Errorf("other-key-1 varies %q, want arguments.lang", got)
	}
	if got := strings.Join(vs[3].varies, ","); got != "arguments.deep.tags[0],arguments.lang,arguments.n" {
		t.Errorf("other-value varies %q: want the strings and numbers", got)
	}
	if got := strings.Join(requestInputs(base), ","); got != "arguments.deep.tags[0],arguments.lang,arguments.n,arguments.verbose" {
		t.Errorf("inputs %q: want every argument", got)
	}
	req := h1.NewRequest("POST", "/mcp", []byte(toolCall), h1.Field{Name: "Content-Type", Value: "application/json"})

	ignored := vs[1].alter(req)
	jb, ok := parseJSONBody(ignored.Body)
	if !ok || jb.inputs[IgnoredParam] == nil || jb.doc["method"] != "tools/call" || jb.inputs["lang"] != "en" {
		t.Fatalf("ignored-field: %s, want the arguments with %s", ignored.Body, IgnoredParam)
	}
	if s := shownRequest(vs[1], ignored); !strings.Contains(s, "arguments with probe-experiment: 1") {
		t.Errorf("ignored-field shown as %q", s)
	}

	varied := vs[3].alter(req)
	jb, _ = parseJSONBody(varied.Body)
	if jb.inputs["lang"] != "de" {
		t.Errorf("lang = %v, want de, the user's other request's", jb.inputs["lang"])
	}
	if n := jb.inputs["n"]; n == nil || n.(interface{ String() string }).String() != "41" {
		t.Errorf("n = %v, want 41", n)
	}
	if tag := jb.inputs["deep"].(map[string]any)["tags"].([]any)[0]; tag != "b2" {
		t.Errorf("deep.tags[0] = %v, want b2 (same shape)", tag)
	}
	if jb.inputs["verbose"] != true || jb.doc["params"].(map[string]any)["name"] != "catalog" {
		t.Errorf("what other-value does not vary changed: %s", varied.Body)
	}
	if s := shownRequest(vs[3], varied); !strings.Contains(s, `arguments.lang = "de"`) || !strings.Contains(s, "arguments.n = 41") {
		t.Errorf("other-value shown as %q", s)
	}
}

// A plain JSON body's inputs are its members; a body that is not JSON
// keeps the query's control and has no other-value.
func TestExperimentVariesAJSONBody(t *testing.T) {
	body := `{"q":"gzip","page":2}`
	base := &result.Digest{Key: "k", Op: "POST /search", Request: "POST /search " + body, Input: true, BodyBytes: len(body)}
	vs := requestVariants(base, nil, false)
	if vs[1].name != "ignored-field" || strings.Join(vs[1].varies, ",") != "body.probe-experiment" || vs[1].jsonRPC {
		t.Errorf("control %+v", vs[1])
	}
	if !slices.ContainsFunc(vs, func(v requestVariant) bool { return v.name == "other-value" }) {
		t.Errorf("no other-value of a JSON body")
	}
	form := &result.Digest{Key: "k", Op: "POST /search", Request: "POST /search q=gzip", Input: true, BodyBytes: 6}
	for _, v := range requestVariants(form, nil, false) {
		if v.name == "other-value" || v.name == "ignored-field" {
			t.Errorf("a form body got %s", v.name)
		}
	}
	if r := withOtherValues(nil)(h1.NewRequest("POST", "/", []byte(`{"on":true}`))); r != nil {
		t.Errorf("a body of only a boolean was varied: %s", r.Body)
	}
}

// A JSON-RPC server refuses with a 200: its error, or a tool's isError,
// fails the variant's call with the server's words; a plain reply passes.
func TestRefusedRPC(t *testing.T) {
	reply := func(ctype, body string) *probes.Reply {
		return &probes.Reply{Status: 200, Body: []byte(body), Header: func(n string) string {
			if strings.EqualFold(n, "Content-Type") {
				return ctype
			}
			return ""
		}}
	}
	check := refusedRPC(nil)
	sse := "event: message\nid: 1\ndata: " +
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"unknown argument " +
		"\\\"probe-experiment\\\"\"}],\"isError\":true}}\n\n"
	if err := check(reply("text/event-stream", sse)); err == nil || !strings.Contains(err.Error(), "isError") ||
		!strings.Contains(err.Error(), "probe-experiment") {
		t.Errorf("a tool's isError: %v", err)
	}
	rpcErr := `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"invalid params: additional properties"}}`
	if err := check(reply("application/json", rpcErr)); err == nil || !strings.Contains(err.Error(), "-32602: invalid params") {
		t.Errorf("a JSON-RPC error: %v", err)
	}
	ok := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"fine"}]}}`
	if err := check(reply("application/json", ok)); err != nil {
		t.Errorf("a result: %v", err)
	}
	if err := check(&probes.Reply{Status: 400, Body: []byte("bad"), Header: func(string) string { return "" }}); err == nil {
		t.Errorf("a 400 passed")
	}
}

// A call of no input (an MCP tool called with {}) has nothing to vary
// (the verdict's side: verdict's TestVerdictCallWithoutInput); one that
// carries a header or a member is not.
func TestExperimentCallWithoutInput(t *testing.T) {
	empty := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_graph","arguments":{}}}`
	base := &result.Digest{Key: "k", Request: "POST /mcp " + empty, Input: true}
	if !withoutInput(base) {
		t.Fatalf("%s carries input?", empty)
	}
	if withoutInput(&result.Digest{Request: "POST /mcp " + toolCall}) || withoutInput(&result.Digest{Request: "POST /mcp " + empty,
		Headers: []string{"Cookie"}}) {
		t.Errorf("a call with arguments or a cookie carries no input?")
	}
}

// A JSON-RPC call's _meta is the protocol's (MCP's stateless lane puts its
// one protocol version and the client's name there): neither an input a
// claim needs varied nor one other-value changes, where a plain JSON
// body's member of that name is the user's.
func TestExperimentLeavesTheProtocolsMeta(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"probe","version":"0.1"}}}}`
	base := &result.Digest{Key: "k", Op: "tools/list", Request: "POST /mcp " + list, Input: true}
	if in := requestInputs(base); len(in) != 0 || !withoutInput(base) {
		t.Errorf("tools/list's inputs %v: want none", in)
	}
	for _, v := range requestVariants(base, nil, false) {
		if v.name == "other-value" {
			t.Errorf("other-value of the protocol's _meta: %v", v.varies)
		}
	}
	withArg := strings.Replace(list, `"params":{`, `"params":{"cursor":"c2",`, 1)
	if in := requestInputs(&result.Digest{Request: "POST /mcp " + withArg}); strings.Join(in, ",") != "params.cursor" {
		t.Errorf("inputs %v: want params.cursor alone", in)
	}
	plain := `{"_meta":{"lang":"en"},"q":"go"}`
	if in := requestInputs(&result.Digest{Request: "POST /search " + plain}); strings.Join(in, ",") != "body._meta.lang,body.q" {
		t.Errorf("a plain body's inputs %v: its _meta is the user's", in)
	}
	if probes.IsInputHeader("Mcp-Method") || probes.IsInputHeader("mcp-name") || !probes.IsInputHeader("X-Api-Key") {
		t.Errorf("MCP's routing fields repeat the body; an API key is an input")
	}
}
