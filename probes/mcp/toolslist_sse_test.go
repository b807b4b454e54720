package mcp

import (
	"strings"
	"testing"

	"github.com/probehq/probe/probes"
)

// The official Go SDK answers a JSON-RPC request with an event stream of
// one message unless told to answer JSON: both are a reply.
func TestJSONRPCRepliesAsAnEventStream(t *testing.T) {
	reply := func(ct, body string) *probes.Reply {
		return &probes.Reply{Status: 200, Body: []byte(body), Header: func(name string) string {
			if strings.EqualFold(name, "Content-Type") {
				return ct
			}
			return ""
		}}
	}
	tools := `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"greet","inputSchema":{"type":"object"}}]}}`
	check := checkJSONRPC(checkTools)
	for _, tc := range []struct {
		name, ct, body string
		ok             bool
	}{
		{"json", "application/json", tools, true},
		{"one event", "text/event-stream", "event: message\nid: 1_0\ndata: " + tools + "\n\n", true},
		{"crlf, split data", "text/event-stream", "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\r\ndata: " +
			"\"result\":{\"tools\":[]}}\r\n\r\n", false},
		{"an error event", "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":\"no\"}}\n\n", false},
		{"html", "text/html", "<html>", false},
		{"notifications first", "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":" +
			"\"notifications/progress\",\"params\":{\"progress\":1}}\n\nevent: message\ndata: " + tools + "\n\n", true},
		{"a server's request first", "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n\n" +
			"data: " + tools + "\n\n", true},
		{"notifications only", "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n", false},
		{"an event not JSON", "text/event-stream", "data: hello\n\ndata: " + tools + "\n\n", false},
	} {
		err := check(reply(tc.ct, tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		// A failed reply is counted under one line of its reason.
		if err != nil && (strings.ContainsAny(err.Error(), "\r\n") || len(err.Error()) > 300) {
			t.Errorf("%s: the reason is not one short line: %q", tc.name, err)
		}
	}
	if got := sseEvents([]byte("data: {\"a\":\r\ndata: 1}\r\n\r\nid: 2\n\ndata: x")); len(got) != 2 ||
		string(got[0]) != "{\"a\":\n1}" || string(got[1]) != "x" {
		t.Errorf("sseEvents: %q", got)
	}
}
