package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/probes"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/probehq/probe/lib/h1"
)

// A tool's call on the official SDK's default server (a session per
// client, replies as event streams): the entry's header reaches the
// session's initialize too, each filled argument object is a key, and a
// tool result with isError is a failed call, its words quoted.
func TestToolsCallOnTheSDK(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Word string }
			json.Unmarshal(req.Params.Arguments, &args)
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "word " + args.Word}}}
			res.IsError = args.Word == "bad"
			return res, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tg := targetOf(t, srv)
	key := []h1.Field{{Name: "X-Key", Value: "k"}}

	l := &ToolsCall{Tool: "echo", Arguments: `{"word": "{w}"}`, Params: []probes.Param{{Name: "w", Values: []string{"a", "b"}}}, Header: key}
	run, err := probes.RunLoad(context.Background(), l, tg,
		probes.LoadOptions{Concurrency: 2, Duration: 300 * time.Millisecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	keys := 0
	for _, op := range run.Ops {
		if op.Name == "tools/call echo" && (op.Calls == 0 || op.Errors > 0) {
			t.Errorf("tools/call echo: %d calls, %d errors (%v)", op.Calls, op.Errors, run.Errors)
		}
	}
	for _, d := range run.Digests {
		if strings.HasPrefix(d.Key, "tools/call echo ") {
			keys++
		}
	}
	if keys != 2 {
		t.Errorf("%d keys, want one for each word", keys)
	}

	bad := &ToolsCall{Tool: "echo", Arguments: `{"word": "bad"}`, Header: key}
	if err := probes.Prepare(context.Background(), bad, tg, 5*time.Second); err == nil || !strings.Contains(err.Error(), "isError") ||
		!strings.Contains(err.Error(), "word bad") {
		t.Errorf("a tool that answers isError: %v", err)
	}
	if err := probes.Prepare(context.Background(), &ToolsCall{Tool: "echo", Arguments: "{}"}, tg, 5*time.Second); err == nil ||
		!strings.Contains(err.Error(), "401") {
		t.Errorf("without the entry's header: %v", err)
	}
}

// targetOf is the target of a test server.
func targetOf(t *testing.T, srv *httptest.Server) *probes.Target {
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &probes.Target{URL: u}
}
