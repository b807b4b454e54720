package agents

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// An MCP endpoint that answers 307 to another address (another port of
// 127.0.0.1: another origin) — every POST, or the tools/list alone after
// a clean initialize: the redirect is refused in one line naming its
// Location, and the other address gets no request (no key, no JSON-RPC
// body). The keyed RoundTripper sets the key on every request it sends;
// the client's CheckRedirect stops the hop before it.
func TestRedirectedMCPRequestIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, move, want string
	}{
		{"every POST", "", "MCP initialize at "},
		{"tools/list", `"tools/list"`, "MCP tools/list at "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got atomic.Int64
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
			t.Cleanup(other.Close)
			m := newMemory()
			mcpURL := m.serve(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if r.Method == http.MethodPost && bytes.Contains(body, []byte(tc.move)) {
					http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
					return
				}
				req, _ := http.NewRequestWithContext(r.Context(), r.Method, mcpURL, bytes.NewReader(body))
				req.Header = r.Header.Clone()
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					http.Error(w, err.Error(), 502)
					return
				}
				defer resp.Body.Close()
				for k, v := range resp.Header {
					w.Header()[k] = v
				}
				w.WriteHeader(resp.StatusCode)
				io.Copy(w, resp.Body)
			}))
			t.Cleanup(srv.Close)
			o := options(srv.URL)
			o.Keys = []string{"the-agents-key"}
			o.Header = http.Header{"X-Api-Key": {"standing"}}
			_, err := Prepare(context.Background(), FixtureSpec(), o)
			if got.Load() != 0 {
				t.Fatalf("the other address got %d requests (the key and the body with them)", got.Load())
			}
			want := tc.want + srv.URL + ": the MCP request was redirected (307 to " + other.URL + "/mcp)"
			if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line starting %q", err, want)
			}
		})
	}
}
