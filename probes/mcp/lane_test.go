package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/probehq/probe/probes"
)

// sdkServer is an MCP server on the official SDK in one of its four
// shapes, with one tool; seen counts the requests' methods, each with the
// routing header and the _meta's protocol version it carried.
func sdkServer(t *testing.T, stateless, jsonReplies bool, seen chan<- string) *httptest.Server {
	h := sdkHandler(stateless, jsonReplies)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		json.Unmarshal(body, &req)
		select {
		case seen <- fmt.Sprintf("%s method=%s name=%s meta=%v sid=%t", req.Method, r.Header.Get("Mcp-Method"),
			r.Header.Get("Mcp-Name"), req.Params.Meta["io.modelcontextprotocol/protocolVersion"], r.Header.Get("Mcp-Session-Id") != ""):
		default:
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sdkHandler is the SDK's streamable HTTP handler of a server with one tool.
func sdkHandler(stateless, jsonReplies bool) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: stateless, JSONResponse: jsonReplies})
}

// The SDK's four shapes load with no error: the stateless server in the
// 2026-07-28 lane (server/discover, _meta and Mcp-Method on every request,
// no session, no initialize), the session server in the session lane; the
// run says which lane and version it measured.
func TestToolsListEveryShapeOfTheSDK(t *testing.T) {
	for _, tc := range []struct {
		stateless, json bool
		lane, version   string
	}{{false, false, "session", "2025-11-25"}, {false, true, "session", "2025-11-25"},
		{true, false, "stateless", "2026-07-28"}, {true, true, "stateless", "2026-07-28"}} {
		t.Run(fmt.Sprintf("stateless=%t,json=%t", tc.stateless, tc.json), func(t *testing.T) {
			seen := make(chan string, 1000)
			srv := sdkServer(t, tc.stateless, tc.json, seen)
			for _, l := range []probes.Microload{&ToolsList{Path: "/"}, &ToolsCall{Path: "/", Tool: "echo"}} {
				run, err := probes.RunLoad(context.Background(), l, targetOf(t, srv),
					probes.LoadOptions{Concurrency: 2, Duration: 200 * time.Millisecond, Timeout: 5 * time.Second})
				if err != nil {
					t.Fatalf("%s: %v", l.Name(), err)
				}
				calls, errs := run.Requests()
				if calls == 0 || errs != 0 || len(run.Errors) != 0 {
					t.Errorf("%s: %d calls, %d errors %v", l.Name(), calls, errs, run.Errors)
				}
				if run.MCP == nil || run.MCP.Lane != tc.lane || run.MCP.ProtocolVersion != tc.version {
					t.Errorf("%s: lane %+v, want %s %s", l.Name(), run.MCP, tc.lane, tc.version)
				}
			}
			close(seen)
			var initialize, routed, meta int
			for s := range seen {
				initialize += strings.Count(s, "initialize ")
				if strings.HasPrefix(s, "tools/") {
					if strings.Contains(s, "method=tools/") {
						routed++
					}
					if strings.Contains(s, "meta=2026-07-28") {
						meta++
					}
					if tc.stateless && (strings.Contains(s, "sid=true") || !strings.Contains(s, "method=tools/") ||
						!strings.Contains(s, "meta=2026-07-28") || strings.HasPrefix(s, "tools/call") && !strings.Contains(s, "name=echo")) {
						t.Errorf("a request of the stateless lane: %s", s)
					}
				}
			}
			if tc.stateless && initialize != 0 {
				t.Errorf("%d initialize sent to a stateless server of the 2026-07-28 lane", initialize)
			}
			if !tc.stateless && (initialize == 0 || routed != 0 || meta != 0) {
				t.Errorf("session lane: %d initialize, %d routed, %d with _meta", initialize, routed, meta)
			}
		})
	}
}

// rpcServer answers each method with reply(method) as JSON (status 200),
// or an event stream when the reply starts with "data:".
func rpcServer(t *testing.T, reply func(method string) (int, string)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		status, body := reply(req.Method)
		if strings.HasPrefix(body, "data:") {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(status)
			io.WriteString(w, body)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // a stream that never ends
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, req.ID, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const (
	toolsResult = `"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
	initResult  = `"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`
)

// What the lanes refuse is one line each: a version refused on both
// lanes (the versions on each side), initialize answered with a version
// probe does not speak, a discover reply without the tools capability, an
// event stream that never yields the result (a timeout, said as such).
func TestToolsListLaneRefusals(t *testing.T) {
	refuse := func(asked string) string {
		return `"error":{"code":-32022,"message":"unsupported protocol version","data":{"supported":["2027-03-01"],` +
			`"requested":"` + asked + `"}}`
	}
	for _, tc := range []struct {
		name  string
		reply func(method string) (int, string)
		want  []string
	}{
		{"refused on both lanes", func(m string) (int, string) {
			if m == "server/discover" {
				return 400, refuse("2026-07-28")
			}
			return 400, refuse("2025-11-25")
		}, []string{"probe asked 2026-07-28, the server supports 2027-03-01",
			"initialize: unsupported MCP protocol version: probe asked 2025-11-25, the server supports 2027-03-01"}},
		{"initialize answers an unknown version", func(m string) (int, string) {
			if m == "initialize" {
				return 200, strings.Replace(initResult, "2025-06-18", "2023-01-01", 1)
			}
			return 200, `"error":{"code":-32601,"message":"method not found"}`
		}, []string{`the server answers protocol version "2023-01-01"; probe speaks 2025-11-25, 2025-06-18`}},
		{"discover without tools", func(m string) (int, string) {
			return 200, `"result":{"supportedVersions":["2026-07-28"],"capabilities":{"logging":{},"prompts":{}}}`
		}, []string{"capabilities hold no tools (it names: logging, prompts)"}},
		{"a stream that never yields the result", func(m string) (int, string) {
			switch m {
			case "initialize":
				return 200, initResult
			case "tools/list":
				return 200, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
			}
			return 404, `"error":{"code":-32601,"message":"method not found"}`
		}, []string{"MCP tools/list", "timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := rpcServer(t, tc.reply)
			err := probes.Prepare(context.Background(), &ToolsList{Path: "/"}, targetOf(t, srv), 300*time.Millisecond)
			if tc.name == "a stream that never yields the result" {
				if err != nil {
					t.Fatalf("prepare: %v", err)
				}
				run, lerr := probes.RunLoad(context.Background(), &ToolsList{Path: "/"}, targetOf(t, srv),
					probes.LoadOptions{Concurrency: 1, Duration: 200 * time.Millisecond, Timeout: 300 * time.Millisecond})
				if lerr != nil {
					t.Fatal(lerr)
				}
				err = fmt.Errorf("MCP tools/list: %v", run.Errors)
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, "\n") || len(msg) > 300 {
				t.Errorf("not one line: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q, want %q", msg, w)
				}
			}
		})
	}
}
