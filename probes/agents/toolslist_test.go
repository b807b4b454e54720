package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostileMCP is an MCP endpoint that answers initialize and then serves
// tools/list pages as page(n) says (n from 1), counting the pages served.
type hostileMCP struct {
	pages atomic.Int64
	page  func(n int64, r *http.Request) (tools []map[string]any, next string)
}

func (h *hostileMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var result any
	switch req.Method {
	case "initialize":
		result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "hostile", "version": "1"}}
	case "tools/list":
		tools, next := h.page(h.pages.Add(1), r)
		res := map[string]any{"tools": tools}
		if next != "" {
			res["nextCursor"] = next
		}
		result = res
	default:
		if len(req.ID) == 0 { // a notification
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
			"error": map[string]any{"code": -32601, "message": "method not found"}})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

func tool(name string) map[string]any {
	return map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}
}

// A server's tools/list pages are bounded: endless empty pages with fresh
// cursors stop at maxToolPages, a cursor seen before stops at once (the
// pages loop), a giant tool name a page stops at maxToolNameBytes, a page
// that never comes stops at the listing's timeout; each is one line.
func TestToolsListPagesAreBounded(t *testing.T) {
	giant := strings.Repeat("n", 3<<20)
	for _, c := range []struct {
		name     string
		page     func(n int64, r *http.Request) ([]map[string]any, string)
		want     string
		maxPages int64
	}{
		{"endless empty pages", func(n int64, _ *http.Request) ([]map[string]any, string) {
			return []map[string]any{}, fmt.Sprintf("c%d", n)
		}, "over 1000 pages, each with a next cursor: the listing does not end", maxToolPages},
		{"a repeated cursor", func(n int64, _ *http.Request) ([]map[string]any, string) {
			return []map[string]any{tool(fmt.Sprintf("t%d", n))}, fmt.Sprintf("c%d", n%3)
		}, "page 4 names a cursor an earlier page named (c1): the pages loop", 4},
		{"a giant name a page", func(n int64, _ *http.Request) ([]map[string]any, string) {
			return []map[string]any{tool(giant)}, fmt.Sprintf("c%d", n)
		}, "tool names over 1024 KiB in all (page 1)", 1},
		{"a page that never comes", func(n int64, r *http.Request) ([]map[string]any, string) {
			if n > 2 {
				<-r.Context().Done() // until probe gives up
			}
			return []map[string]any{}, fmt.Sprintf("c%d", n)
		}, "the listing took over 300ms (2 pages)", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &hostileMCP{page: c.page}
			ts := httptest.NewServer(h)
			defer ts.Close()
			o := options(ts.URL)
			o.Timeout = time.Minute // one call's: the listing's own bound ends it
			if c.name == "a page that never comes" {
				defer func(d time.Duration) { toolsListTime = d }(toolsListTime)
				toolsListTime = 300 * time.Millisecond
			}
			_, err := Prepare(context.Background(), FixtureSpec(), o)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") ||
				len(err.Error()) > 400 {
				t.Fatalf("err %.500v, want one line with %q", err, c.want)
			}
			if n := h.pages.Load(); n > c.maxPages {
				t.Errorf("the server served %d pages, want at most %d", n, c.maxPages)
			}
		})
	}
}

// The tools a server lists reach probe's error as one line: no escape, no
// carriage return, no line of the server's own; at most 20 names, each
// cut, then how many more.
func TestToolsTheServerNamesAreOneLine(t *testing.T) {
	h := &hostileMCP{page: func(n int64, _ *http.Request) ([]map[string]any, string) {
		var tools []map[string]any
		tools = append(tools, tool("\x1b[2Jclear\r\nprobe: all checks passed, exit 0"), tool(strings.Repeat("L", 5000)))
		for i := range 100 {
			tools = append(tools, tool(fmt.Sprintf("t%03d", i)))
		}
		return tools, ""
	}}
	ts := httptest.NewServer(h)
	defer ts.Close()
	_, err := Prepare(context.Background(), FixtureSpec(), options(ts.URL))
	if _, ok := err.(*ErrTool); !ok {
		t.Fatalf("err %v, want the tool the server lacks", err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\x1b\r\n") || len(msg) > 2000 || !strings.HasSuffix(msg, " and 82 more") ||
		!strings.Contains(msg, "[2Jclear probe: all checks passed") || !strings.Contains(msg, strings.Repeat("L", 64)+"…") {
		t.Fatalf("err %q", msg)
	}
}
