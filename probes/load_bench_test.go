package probes

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
)

// BenchmarkClosedLoop is the engine's per-request path: one client sending
// back to back to a loopback server, each reply checked and recorded as a
// measured request. Its ns/op includes the server's share of the round trip.
func BenchmarkClosedLoop(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c := NewClient(&Target{URL: u}, 0)
	defer c.Close()
	c.measuring.Store(true)
	call := Call{Op: "GET /", Key: "/", Req: h1.NewRequest("GET", "/", nil)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.do(call, time.Time{}, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSecondTally is what the per-second series adds to each measured
// request: a second's index, two counters and one coarse histogram record.
func BenchmarkSecondTally(b *testing.B) {
	from := time.Now()
	t := newSecondTally(newPerSecond(), from, time.Hour)
	done := from
	b.ReportAllocs()
	for b.Loop() {
		done = done.Add(10 * time.Microsecond) // a new second every 100,000 requests
		t.record(done, 3*time.Millisecond, false)
	}
}
