package pipeline

import (
	"slices"
	"testing"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/result"
)

// A JSON body's members are inputs to the analyzer's evidence as headers
// are: one that held the same value in every key of the operation was
// never varied, and keeps a load-time claim at most cacheable, named.
func TestRepliesNameTheBodyMembersNotVaried(t *testing.T) {
	call := func(q string) string {
		return `POST /mcp {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find","arguments":{"q":"` + q +
			`","lang":"en","limit":5}}}`
	}
	run := &result.Run{Digests: []result.Digest{
		{Key: "a", Op: "find", Request: call("gzip"), Input: true},
		{Key: "b", Op: "find", Request: call("cache"), Input: true},
		{Key: "/x", Op: "GET /x", Request: "GET /x"},
	}}
	rs := replies(run)
	if len(rs) != 3 || !slices.Equal(rs[0].Headers, []string{"arguments.lang", "arguments.limit", "arguments.q"}) ||
		!slices.Equal(rs[0].HeadersVaried, []string{"arguments.q"}) || len(rs[2].Headers) != 0 {
		t.Fatalf("replies %+v", rs)
	}
	if got := analyzers.UnvariedHeaders(rs); !slices.Equal(got, []string{"arguments.lang", "arguments.limit"}) {
		t.Errorf("not varied: %v", got)
	}
}
