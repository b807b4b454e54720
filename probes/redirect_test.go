package probes

import (
	"context"
	"testing"
	"time"

	"github.com/probehq/probe/lib/redirect/redirecttest"
)

// Issue 34: no credential follows a redirect. Each client of this
// package against a target that answers 3xx to another address (another
// port of 127.0.0.1: another origin, where Go's own client keeps even
// Authorization): the other address gets no request at all.

// The load engine (lib/h1, lib/h2) follows no redirect: a 3xx is a status
// like any other, a reply below 400, over HTTP/1.1 and HTTP/2 alike.
func TestLoadEngineFollowsNoRedirect(t *testing.T) {
	other, got := redirecttest.Elsewhere(t)
	for _, http2 := range []bool{false, true} {
		target := &Target{URL: redirecttest.Mover(t, other), Header: redirecttest.Secrets}
		if http2 {
			target.HTTP2 = &HTTP2{}
		}
		run, err := RunLoad(context.Background(), &HTTP{Path: "/x"}, target,
			LoadOptions{Concurrency: 2, Duration: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		calls, errs := run.Requests()
		if calls < 5 || errs != 0 {
			t.Errorf("HTTP/2 %v: %d calls, %d errors (%v): want the 307s as replies", http2, calls, errs, run.Errors)
		}
		if got.Load() != 0 {
			t.Fatalf("HTTP/2 %v: the other address got %d requests", http2, got.Load())
		}
	}
}
