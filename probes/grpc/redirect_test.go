package grpc

import (
	"context"
	"testing"
	"time"

	"github.com/probehq/probe/lib/redirect/redirecttest"
	"github.com/probehq/probe/probes"
)

// gRPC follows no redirect, by its load (lib/h2) or its reflection
// (grpc-go): a 307 is a failed call or a failed reflection.
func TestGRPCFollowsNoRedirect(t *testing.T) {
	other, _ := redirecttest.Elsewhere(t)
	target := &probes.Target{URL: redirecttest.Mover(t, other), Header: redirecttest.Secrets, HTTP2: &probes.HTTP2{}}
	proto := writeProto(t, "feed.proto", `syntax = "proto3";
package feed;
message Ask { string topic = 1; }
message Item { string text = 1; }
service Feed { rpc Get(Ask) returns (Item); }
`)
	grpcLoad := &GRPC{Method: "feed.Feed/Get", Data: `{"topic": "x"}`, Proto: []string{proto}}
	run, err := probes.RunLoad(context.Background(), grpcLoad, target, probes.LoadOptions{Concurrency: 1, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if calls, errs := run.Requests(); calls == 0 || errs != calls {
		t.Errorf("%d calls, %d errors: want every 307 a failed call", calls, errs)
	}
	target = &probes.Target{URL: redirecttest.Mover(t, other), Header: redirecttest.Secrets, HTTP2: &probes.HTTP2{}}
	if _, err := probes.RunLoad(context.Background(), &GRPC{Method: "feed.Feed/Get"}, target,
		probes.LoadOptions{Concurrency: 1, Duration: 100 * time.Millisecond}); err == nil {
		t.Error("reflection answered 307 found the method")
	}
}
