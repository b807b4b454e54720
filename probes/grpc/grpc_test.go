package grpc

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h2/h2ctest"
	"github.com/probehq/probe/probes"
)

// A server stream's verdict is in its trailers: replies of no messages
// are the same bytes whether they ended OK or UNAVAILABLE, and each is
// judged by its own grpc-status (a verdict cached by the body alone once
// passed every failing stream after a good one).
func TestGRPCStreamVerdictsAreTheTrailers(t *testing.T) {
	proto := writeProto(t, "feed.proto", `syntax = "proto3";
package feed;
message Ask { string topic = 1; }
message Item { string text = 1; }
service Feed { rpc Watch(Ask) returns (stream Item); }
`)
	var n atomic.Int64
	u := h2ctest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		w.WriteHeader(200)
		if n.Add(1)%2 == 0 {
			w.Header().Set("Grpc-Status", "14")
			w.Header().Set("Grpc-Message", "the feed is down")
			return
		}
		w.Header().Set("Grpc-Status", "0")
	}), false).URL
	target := &probes.Target{URL: u, HTTP2: &probes.HTTP2{}}
	run, err := probes.RunLoad(context.Background(), &GRPC{Method: "feed.Feed/Watch", Data: `{"topic": "x"}`, Proto: []string{proto}},
		target, probes.LoadOptions{Concurrency: 1, Requests: 30, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	calls, errs := run.Requests()
	if calls < 10 || errs < calls/2-1 || errs > calls/2+1 {
		t.Fatalf("%d calls, %d failed (%v): want every second one failed", calls, errs, run.Errors)
	}
}

// writeProto writes a .proto file of text, named name, in a folder of the
// test's: its path.
func writeProto(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
