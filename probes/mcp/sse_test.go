package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
)

// An SDK server whose event streams stay open after their result (a
// proxy that holds them, a server that streams on): each call is timed to
// its result, none fails, and the run says the streams were cut.
func TestEventStreamsKeptOpenAfterTheResult(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		sdk := sdkHandler(stateless, false)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sdk.ServeHTTP(w, r)
			if strings.Contains(w.Header().Get("Content-Type"), "text/event-stream") {
				select { // the stream stays open after the SDK's handler is done
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}
		}))
		run, err := probes.RunLoad(context.Background(), &ToolsList{Path: "/"}, targetOf(t, srv),
			probes.LoadOptions{Concurrency: 2, Duration: time.Second, Timeout: 5 * time.Second})
		srv.Close()
		if err != nil {
			t.Fatalf("stateless=%t: %v", stateless, err)
		}
		calls, errs := run.Requests()
		if calls == 0 || errs != 0 {
			t.Fatalf("stateless=%t: %d calls, %d errors %v", stateless, calls, errs, run.Errors)
		}
		for _, op := range run.Ops {
			if op.Name == "tools/list" && op.Latency.ValueAtQuantile(50) >= h1.StreamGrace.Microseconds()/2 {
				t.Errorf("stateless=%t: tools/list's median %d µs: timed to the stream's cut, not the result",
					stateless, op.Latency.ValueAtQuantile(50))
			}
		}
		cut := false
		for _, w := range run.Warnings {
			cut = cut || w.Kind == "stream-kept-open"
		}
		if !cut {
			t.Errorf("stateless=%t: no stream-kept-open warning in %v", stateless, run.Warnings)
		}
	}
}
