// Command fuzzvictim is an MCP server on the official Go SDK for probe
// fuzz mcp's tests: its tool "count" dies on an n past a million (a panic
// in a goroutine of its own, which nothing recovers; -in-handler: in the
// handler itself; -refuse: it says isError instead), its tool "echo" is
// fine. -stateless and -json choose the SDK's shape; -no-tools serves no
// tool, -refuse-version refuses every protocol version probe asks,
// -keep-open keeps each event stream open after its reply, -page-size
// lists the tools that many a page; -batch adds the tool "batch", which
// dies on an item of a size past a million, deep in its argument.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type countArgs struct {
	N     int    `json:"n"`
	Label string `json:"label,omitempty"`
}

type batchArgs struct {
	Items []struct {
		Name string `json:"name"`
		Size int    `json:"size"`
	} `json:"items"`
}

type echoArgs struct {
	Text  string   `json:"text"`
	Loud  bool     `json:"loud,omitempty"`
	Times float64  `json:"times,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

func main() {
	stateless := flag.Bool("stateless", false, "the SDK's stateless shape")
	jsonReplies := flag.Bool("json", false, "JSON replies, not event streams")
	inHandler := flag.Bool("in-handler", false, "panic in the tool's handler, not in a goroutine")
	refuse := flag.Bool("refuse", false, "refuse a large n with isError instead of dying")
	noTools := flag.Bool("no-tools", false, "serve no tool")
	refuseVersion := flag.Bool("refuse-version", false, "refuse every protocol version")
	keepOpen = flag.Bool("keep-open", false, "keep each event stream open after its reply")
	pageSize := flag.Int("page-size", 0, "tools a page of tools/list (0: the SDK's default)")
	batch := flag.Bool("batch", false, "serve the tool batch")
	flag.Parse()
	addr := "127.0.0.1:" + os.Getenv("PORT")
	if *refuseVersion {
		log.Fatal(http.ListenAndServe(addr, http.HandlerFunc(refuseEveryVersion)))
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "fuzzvictim", Version: "1"}, &mcp.ServerOptions{PageSize: *pageSize})
	if *noTools {
		serve(addr, server, *stateless, *jsonReplies)
	}
	mcp.AddTool(server, &mcp.Tool{Name: "count", Description: "counts to n"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in countArgs) (*mcp.CallToolResult, any, error) {
			if in.N > 1_000_000 {
				switch {
				case *refuse:
					return nil, nil, errors.New("n is too large")
				case *inHandler:
					panic(fmt.Sprintf("count: n=%d overflows the table", in.N))
				}
				go func() { panic(fmt.Sprintf("count: n=%d overflows the table", in.N)) }()
				time.Sleep(time.Second)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.N)}}}, nil, nil
		})
	if *batch {
		mcp.AddTool(server, &mcp.Tool{Name: "batch", Description: "sizes a batch"},
			func(ctx context.Context, _ *mcp.CallToolRequest, in batchArgs) (*mcp.CallToolResult, any, error) {
				for _, it := range in.Items {
					if it.Size > 1_000_000 {
						go func() { panic(fmt.Sprintf("batch: %q of size %d overflows", it.Name, it.Size)) }()
						time.Sleep(time.Second)
					}
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(len(in.Items))}}}, nil, nil
			})
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "says the text again"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	serve(addr, server, *stateless, *jsonReplies)
}

var keepOpen *bool

func serve(addr string, server *mcp.Server, stateless, jsonReplies bool) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: stateless, JSONResponse: jsonReplies})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if *keepOpen && w.Header().Get("Content-Type") == "text/event-stream" {
			w.(http.Flusher).Flush()
			select { // a stream kept open after its reply, as some servers do
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
		}
	}))
	log.Fatal(http.ListenAndServe(addr, mux))
}

// refuseEveryVersion answers every request with the protocol's refusal of
// the version asked (a server of a later protocol only).
func refuseEveryVersion(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			ProtocolVersion string         `json:"protocolVersion"`
			Meta            map[string]any `json:"_meta"`
		} `json:"params"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	if len(req.ID) == 0 {
		req.ID = json.RawMessage("null")
	}
	asked := req.Params.ProtocolVersion
	if v, ok := req.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string); ok {
		asked = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"unsupported protocol version",`+
		`"data":{"supported":["2099-01-01"],"requested":%q}}}`, req.ID, asked)
}
