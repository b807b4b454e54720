// Command mcptools is the e2e test's MCP server for probe's experiment
// (issue 35: MCP tools with true load-time work and argument-keyed work),
// on the official Go SDK in its default streamable-HTTP shape (a session
// per client, replies as event streams). Its tools:
//
//   - catalog_summary, the true load-time positive: it builds the same
//     catalogue (20,000 prices, sorted) on every call, whatever its
//     arguments (a client's name, a page), and answers the same summary.
//   - catalog_for, the trap: it builds the catalogue of the region its
//     region argument names (prices drawn from a source seeded by the
//     region's name, sorted): the same work for every region, each
//     region's own reply.
//   - catalog_strict: catalog_summary's work behind the SDK's inferred,
//     strict schema (a struct: unknown arguments are refused with
//     isError), so a variant that adds an argument of probe's own is void.
//
// The lenient tools take any further argument, as a schema without
// "additionalProperties": false does. MCP is served on -addr at /mcp,
// /debug/pprof/ on -pprof. -stateless and -json choose among the SDK's
// four shapes (issue 38): stateless (no session, the 2026-07-28 lane with
// server/discover beside initialize) and JSON replies instead of event
// streams.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	mrand "math/rand/v2"
	"net/http"
	_ "net/http/pprof"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const catalogueSize = 20000

// prices are the catalogue's prices as stored: drawn from a source seeded
// by seed.
func prices(seed uint64) []int {
	r := mrand.New(mrand.NewPCG(seed, 0x5eed))
	out := make([]int, catalogueSize)
	for i := range out {
		out[i] = r.IntN(1_000_000)
	}
	return out
}

// buildCatalogue is the catalogue in price order, built again on every
// call (a copy, sorted).
func buildCatalogue(stored []int) []int {
	c := slices.Clone(stored)
	slices.Sort(c)
	return c
}

// buildRegionCatalogue is the region's catalogue, built on every call.
func buildRegionCatalogue(region string) []int {
	h := fnv.New64a()
	h.Write([]byte(region))
	c := prices(h.Sum64())
	slices.Sort(c)
	return c
}

// buildStrictCatalogue is catalog_strict's: the same work, its own frame.
func buildStrictCatalogue(stored []int) []int {
	c := slices.Clone(stored)
	slices.Sort(c)
	return c
}

func summary(c []int) string {
	return fmt.Sprintf("%d prices: cheapest %d, median %d, dearest %d", len(c), c[0], c[len(c)/2], c[len(c)-1])
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// lenient is an object schema of string properties that takes further
// properties too.
func lenient(props ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, p := range props {
		s.Properties[p] = &jsonschema.Schema{Type: "string"}
	}
	return s
}

type strictArgs struct {
	Client string `json:"client" jsonschema:"the client's name"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "MCP's listen address (streamable HTTP at /mcp)")
	pprofAddr := flag.String("pprof", "127.0.0.1:8081", "the profiles' listen address")
	stateless := flag.Bool("stateless", false, "serve without sessions (the SDK's Stateless)")
	jsonReplies := flag.Bool("json", false, "answer with JSON, not event streams (the SDK's JSONResponse)")
	flag.Parse()
	stored := prices(1)
	server := mcp.NewServer(&mcp.Implementation{Name: "mcptools", Version: "0.1"}, nil)
	server.AddTool(&mcp.Tool{Name: "catalog_summary", Description: "the catalogue's prices in summary", InputSchema: lenient("client")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(summary(buildCatalogue(stored))), nil
		})
	server.AddTool(&mcp.Tool{Name: "catalog_for", Description: "a region's catalogue in summary", InputSchema: lenient("region")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Region string `json:"region"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Region == "" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "want a region"}}}, nil
			}
			return text(args.Region + ": " + summary(buildRegionCatalogue(args.Region))), nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "catalog_strict", Description: "the catalogue's prices in summary, strictly"},
		func(ctx context.Context, req *mcp.CallToolRequest, args strictArgs) (*mcp.CallToolResult, any, error) {
			return text(summary(buildStrictCatalogue(stored))), nil, nil
		})
	go func() { log.Fatal(http.ListenAndServe(*pprofAddr, nil)) }()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: *stateless, JSONResponse: *jsonReplies}))
	log.Fatal(http.ListenAndServe(*addr, mux))
}
