package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/lib/crash"
	"github.com/probehq/probe/probes/fuzz"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"

	"github.com/probehq/probe/internal/testbuild"
)

// fuzzVictim builds testdata/fuzzvictim, an MCP server on the official SDK
// with a tool that dies on a large argument and one that is fine.
func fuzzVictim(t *testing.T) string { return testbuild.Program(t, "./testdata/fuzzvictim") }

func startFuzzVictim(bin string, args ...string) func(context.Context, io.Writer) (*target.Child, error) {
	return func(ctx context.Context, w io.Writer) (*target.Child, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		return target.Start(ctx, target.ChildSpec{Argv: append([]string{bin}, args...), Env: []string{"PORT=" + port},
			Addr: "127.0.0.1:" + port, Wait: 20 * time.Second, Stderr: w})
	}
}

// fuzzMCP lists the victim's tools on a process of its own, then fuzzes
// them as probe fuzz mcp does: stop > 0 ends the search at that many
// crashes, else it runs for search.
func fuzzMCP(t *testing.T, search time.Duration, stop int, args ...string) (*result.Fuzz, *FuzzServer) {
	t.Helper()
	return fuzzMCPTools(t, nil, search, stop, args...)
}

// fuzzMCPTools is fuzzMCP of the tools named (nil: all).
func fuzzMCPTools(t *testing.T, tools []string, search time.Duration, stop int, args ...string) (*result.Fuzz, *FuzzServer) {
	t.Helper()
	return fuzzMCPWith(t, tools, func(o *fuzz.Options) { o.Duration, o.StopAfter = search, stop }, args...)
}

// fuzzMCPInputs is fuzzMCP of a search of that many inputs (a minute at
// most): the extremes in order first, however busy the machine.
func fuzzMCPInputs(t *testing.T, inputs int64, args ...string) (*result.Fuzz, *FuzzServer) {
	t.Helper()
	return fuzzMCPWith(t, nil, func(o *fuzz.Options) { o.Duration, o.Inputs = time.Minute, inputs }, args...)
}

// fuzzMCPWith is fuzzMCP of the tools named (nil: all), its search set by
// search.
func fuzzMCPWith(t *testing.T, tools []string, search func(*fuzz.Options), args ...string) (*result.Fuzz, *FuzzServer) {
	t.Helper()
	start := startFuzzVictim(fuzzVictim(t), args...)
	child, err := start(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ListToolsToFuzz(child.URL, "/mcp", 5*time.Second)
	child.Kill()
	if err != nil {
		t.Fatal(err)
	}
	templates, skipped, err := server.FuzzTemplates(tools)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("templates: %v, skipped %v", err, skipped)
	}
	o := fuzz.Options{Templates: templates, Start: start, Refused: FuzzRefusal, Vary: FuzzRequestID, Whole: FuzzReplyWhole,
		Concurrency: 2, Timeout: 5 * time.Second, ShrinkTime: 30 * time.Second, Seed: 3}
	search(&o)
	if !server.Lane.Stateless {
		o.Open = func(ctx context.Context, child *target.Child) (http.Header, error) {
			return server.OpenSession(child.URL, 5*time.Second)
		}
	}
	res, err := fuzz.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res, server
}

// The victim's tool count dies on n > 1,000,000 in every shape of the
// SDK: the fuzzer finds it, names the tool and the argument, and shrinks
// n to the threshold. In the session shape every restarted process gets a
// session of its own: no call is refused for a session a dead process
// held (the SDK answers those 404).
func TestFuzzMCPFindsTheArgumentThatKillsATool(t *testing.T) {
	for _, shape := range [][]string{{"-stateless", "-json"}, {"-stateless"}, {}, {"-json"}} {
		t.Run(strings.Join(append([]string{"shape"}, shape...), ""), func(t *testing.T) {
			res, server := fuzzMCP(t, time.Minute, 1, shape...)
			wantStateless := len(shape) > 0 && shape[0] == "-stateless"
			if server.Lane.Stateless != wantStateless {
				t.Errorf("lane %s", server.Lane)
			}
			checkCountCrash(t, res)
			if res.Statuses[404] != 0 {
				t.Errorf("calls refused for their session: %v %v", res.Statuses, res.Failures)
			}
			for reason := range res.Failures {
				if strings.Contains(reason, "session") || strings.Contains(reason, "in-flight request ID") {
					t.Errorf("a reply refused the protocol, not the input: %s", reason)
				}
			}
			if res.Restarts == 0 {
				t.Errorf("no restart after the crash")
			}
		})
	}
}

func checkCountCrash(t *testing.T, res *result.Fuzz) {
	t.Helper()
	if len(res.Crashes) != 1 {
		for _, c := range res.Crashes {
			t.Logf("crash %s at %s: %s", c.Class, c.Endpoint, c.Evidence)
		}
		t.Fatalf("%d crashes, want 1 (%d inputs, ended %q)", len(res.Crashes), res.Inputs, res.Ended)
	}
	c := res.Crashes[0]
	if c.Class != crash.Panic || c.Endpoint != "tools/call count" || !strings.Contains(c.Hole, "the argument n") || !c.Confirmed {
		t.Errorf("crash %s at %q in %q (confirmed %t): %s", c.Class, c.Endpoint, c.Hole, c.Confirmed, c.Evidence)
	}
	var call struct {
		Params struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(c.Body, &call); err != nil {
		t.Fatalf("the crash's body %q: %v", c.Body, err)
	}
	if call.Params.Name != "count" || fmt.Sprint(call.Params.Arguments["n"]) != "1.000001e+06" {
		t.Errorf("shrunk call %s, want count with n=1000001", c.Body)
	}
}

// A tool whose argument is an array of objects dies on one item's size:
// the template follows the schema into the array (a JSON value drawn whole
// would fail the SDK's schema check nearly always), the fuzzer finds the
// crash and names the argument's path.
func TestFuzzMCPReachesIntoStructuredArguments(t *testing.T) {
	res, _ := fuzzMCPTools(t, []string{"batch"}, time.Minute, 1, "-batch", "-json")
	if len(res.Crashes) != 1 {
		t.Fatalf("%d crashes in %d inputs (refused %d): want the batch's", len(res.Crashes), res.Inputs, res.Refused)
	}
	c := res.Crashes[0]
	if c.Endpoint != "tools/call batch" || !strings.Contains(c.Hole, "the argument items[0].size") {
		t.Errorf("crash at %q in %q: %s", c.Endpoint, c.Hole, c.Body)
	}
	if !strings.Contains(string(c.Body), `"size":1000001`) {
		t.Errorf("shrunk call %s, want size 1000001", c.Body)
	}
}

// A server that keeps each event stream open after its reply: the reply
// is whole at its result, no call is a hang, and the crash is found.
func TestFuzzMCPStreamKeptOpenIsNoHang(t *testing.T) {
	res, _ := fuzzMCP(t, time.Minute, 1, "-keep-open")
	checkCountCrash(t, res)
}

// tools/list is read to its last page.
func TestListToolsToFuzzFollowsTheCursor(t *testing.T) {
	child, err := startFuzzVictim(fuzzVictim(t), "-page-size", "1")(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Kill()
	server, err := ListToolsToFuzz(child.URL, "/mcp", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range server.Tools {
		names = append(names, tool.Name)
	}
	if fmt.Sprint(names) != "[count echo]" {
		t.Errorf("listed %v, want [count echo] over two pages", names)
	}
}

// The SDK recovers no panic of a tool's handler, and the streamable
// handler runs it off the HTTP handler's goroutine: the process dies with
// the panic's trace, a crash of class panic like a goroutine's.
func TestFuzzMCPHandlerPanicIsAPanic(t *testing.T) {
	res, _ := fuzzMCP(t, time.Minute, 1, "-in-handler", "-json")
	checkCountCrash(t, res)
}

// The trap: a server whose tools refuse bad input (isError, and the SDK's
// JSON-RPC errors for arguments its schema refuses) is never a crash; the
// refusals are counted as such.
func TestFuzzMCPRefusalsAreNotCrashes(t *testing.T) {
	// Every extreme (169 here), whatever the machine's speed: the tool's
	// refusal answers the first n over a million among them.
	res, _ := fuzzMCPInputs(t, 200, "-refuse", "-stateless")
	if len(res.Crashes) != 0 || res.Restarts != 0 {
		t.Fatalf("%d crashes, %d restarts on a server that only refuses: %+v", len(res.Crashes), res.Restarts, res.Crashes[0])
	}
	if res.Refused == 0 || res.Refused >= res.Inputs {
		t.Errorf("%d of %d inputs refused, want some (the large n, the wrong types) but not all", res.Refused, res.Inputs)
	}
	found := false
	for reason := range res.Failures {
		found = found || strings.Contains(reason, "n is too large")
	}
	if !found {
		t.Errorf("the tool's isError reply is not among the reasons (%d inputs): %v", res.Inputs, res.Failures)
	}
}

// Each property of a tool's input schema is a hole of the kind its type
// implies, named after it; a second template holds the required ones
// alone; a name that reads as a hole stays a name; the stateless lane's
// templates carry _meta and the routing headers, the session lane's
// neither; a tool without properties is skipped, a --tool not listed is
// an error.
func TestFuzzTemplatesFromInputSchemas(t *testing.T) {
	schema := `{"type":"object","required":["id"],"properties":{"id":{"type":"integer"},"ratio":{"type":"number"},` +
		`"q":{"type":["string","null"]},"on":{"type":"boolean"},"tags":{"type":"array"},"{int}":{}}}`
	tools := []ToolSchema{{Name: "search", InputSchema: json.RawMessage(schema)},
		{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for _, ln := range []Lane{{Stateless: true, Version: statelessVersion}, {Version: sessionVersion}} {
		s := &FuzzServer{Lane: ln, Path: "/mcp", Tools: tools}
		if _, _, err := s.FuzzTemplates([]string{"nope"}); err == nil || !strings.Contains(err.Error(), "it lists: search, ping") {
			t.Errorf("unknown tool: %v", err)
		}
		ts, skipped, err := s.FuzzTemplates(nil)
		if err != nil || len(ts) != 2 || len(skipped) != 1 || skipped[0].Tool != "ping" {
			t.Fatalf("%d templates, skipped %v: %v", len(ts), skipped, err)
		}
		all, required := ts[0], ts[1]
		kinds := fmt.Sprint(all.Kinds())
		if kinds != "[int json str int json json]" || fmt.Sprint(required.Kinds()) != "[int]" {
			t.Errorf("kinds %s (ordered id, on, q, ratio, tags, {int}), required %v", kinds, required.Kinds())
		}
		if all.Endpoint != "tools/call search" || all.HoleName(0) != "{int} as the argument id" {
			t.Errorf("endpoint %q, hole %q", all.Endpoint, all.HoleName(0))
		}
		nested := &FuzzServer{Lane: ln, Path: "/mcp", Tools: []ToolSchema{{Name: "batch", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":` +
				`{"size":{"type":"integer"},"name":{"type":"string"}}}}}}`)}}}
		if bs, _, err := nested.FuzzTemplates(nil); err != nil || len(bs) != 1 || fmt.Sprint(bs[0].Kinds()) != "[str int]" ||
			bs[0].HoleName(1) != "{int} as the argument items[0].size" ||
			!strings.Contains(string(bs[0].Request([]string{"x", "9"}).Body), `"arguments":{"items":[{"name":"x","size":9}]}`) {
			t.Errorf("a nested schema: %v", err)
		}
		values := []string{"7", "true", "a\"b", "1", "[]", "null"}
		var call struct {
			Params struct {
				Meta      map[string]any `json:"_meta"`
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		r := all.Request(values)
		if err := json.Unmarshal(r.Body, &call); err != nil {
			t.Fatalf("%s: %v", r.Body, err)
		}
		_, braced := call.Params.Arguments["{int}"]
		if call.Params.Name != "search" || call.Params.Arguments["q"] != `a"b` || call.Params.Arguments["id"] != 7.0 ||
			len(call.Params.Arguments) != 6 || !braced {
			t.Errorf("call %s", r.Body)
		}
		routed := false
		for _, h := range r.Header {
			routed = routed || h.Name == "Mcp-Name" && h.Value == "search"
		}
		if ln.Stateless != (call.Params.Meta != nil) || ln.Stateless != routed {
			t.Errorf("lane %s: _meta %v, headers %v", ln, call.Params.Meta, r.Header)
		}
	}
}
