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

	"github.com/probehq/probe/lib/redirect/redirecttest"
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
			other, got := redirecttest.Elsewhere(t)
			m := newMemory()
			mcpURL := m.serve(t)
			srv := redirecting(t, mcpURL, other.String()+"/mcp", func(body []byte) bool {
				return bytes.Contains(body, []byte(tc.move))
			})
			o := options(srv.URL)
			o.Keys = []string{"the-agents-key"}
			o.Header = http.Header{"X-Api-Key": {"standing"}}
			_, err := Prepare(context.Background(), FixtureSpec(), o)
			if got.Load() != 0 {
				t.Fatalf("the other address got %d requests (the key and the body with them)", got.Load())
			}
			want := tc.want + srv.URL + ": the MCP request was redirected (307 to " + other.String() + "/mcp)"
			if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line starting %q", err, want)
			}
		})
	}
}

// redirecting is an MCP endpoint in front of mcpURL that answers 307 to
// to each POST whose body move chooses, and passes the rest on.
func redirecting(t *testing.T, mcpURL, to string, move func(body []byte) bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && move(body) {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
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
	return srv
}

// An endpoint that sets up cleanly and then, during the run, answers
// every search call 307 to another address: the other address gets
// nothing, and the run's failures name the redirect and its Location (a
// user sees why the calls failed, not only "transport").
func TestRedirectMidRunIsNamed(t *testing.T) {
	other, got := redirecttest.Elsewhere(t)
	m := newMemory()
	search := FixtureSpec().Tool(Search).Name
	var armed atomic.Bool
	srv := redirecting(t, m.serve(t), other.String()+"/elsewhere", func(body []byte) bool {
		return armed.Load() && bytes.Contains(body, []byte(`"`+search+`"`))
	})
	o := options(srv.URL)
	o.Keys = []string{"the-agents-key"}
	l, err := Prepare(context.Background(), FixtureSpec(), o)
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	res, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
	want := "redirected (307 to " + other.String() + "/elsewhere)"
	var named bool
	for _, f := range res.Checks.Failures {
		named = named || strings.HasPrefix(f, search+": ") && strings.Contains(f, want)
	}
	if !named {
		t.Errorf("failures %q name no %s redirect %q", res.Checks.Failures, search, want)
	}
}
