package mcp

import (
	"bytes"
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

// A server whose every tools/list page holds a megabyte of schema and
// names a next page: probe keeps a bounded sum of them (maxToolsListed)
// and says so, rather than a hundred pages' worth.
func TestListToolsToFuzzBoundsWhatItKeeps(t *testing.T) {
	sdk := sdkHandler(false, true)
	big := strings.Repeat("x", 1<<20)
	var pages atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var call struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &call) == nil && call.Method == "tools/list" {
			n := pages.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t%d","inputSchema":{"type":"object",`+
				`"description":%q}}],"nextCursor":"p%d"}}`, call.ID, n, big, n)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sdk.ServeHTTP(w, r)
	}))
	defer srv.Close()
	_, err := ListToolsToFuzz(srv.URL, "/", 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "MiB of tools") || pages.Load() > maxToolsListed>>20+1 {
		t.Errorf("%d pages of a megabyte read: %v", pages.Load(), err)
	}
}
