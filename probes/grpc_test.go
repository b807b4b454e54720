package probes

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// A server stream's verdict is in its trailers: replies of no messages
// are the same bytes whether they ended OK or UNAVAILABLE, and each is
// judged by its own grpc-status (a verdict cached by the body alone once
// passed every failing stream after a good one).
func TestGRPCStreamVerdictsAreTheTrailers(t *testing.T) {
	dir := t.TempDir()
	proto := filepath.Join(dir, "feed.proto")
	if err := os.WriteFile(proto, []byte(`syntax = "proto3";
package feed;
message Ask { string topic = 1; }
message Item { string text = 1; }
service Feed { rpc Watch(Ask) returns (stream Item); }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: &protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		w.WriteHeader(200)
		if n.Add(1)%2 == 0 {
			w.Header().Set("Grpc-Status", "14")
			w.Header().Set("Grpc-Message", "the feed is down")
			return
		}
		w.Header().Set("Grpc-Status", "0")
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	u, _ := url.Parse("http://" + l.Addr().String())
	target := &Target{URL: u, HTTP2: &HTTP2{}}
	run, err := RunLoad(context.Background(), &GRPC{Method: "feed.Feed/Watch", Data: `{"topic": "x"}`, Proto: []string{proto}},
		target, LoadOptions{Concurrency: 1, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	calls, errs := run.Requests()
	if calls < 10 || errs < calls/2-1 || errs > calls/2+1 {
		t.Fatalf("%d calls, %d failed (%v): want every second one failed", calls, errs, run.Errors)
	}
}
