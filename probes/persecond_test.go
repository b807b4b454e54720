package probes

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/result"
)

func TestPerSecondSeriesOfAClosedLoop(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%10 == 0 {
			w.WriteHeader(500) // a failed check: an error of the series too
		}
		time.Sleep(time.Millisecond)
	}))
	defer srv.Close()
	run := loadRoot(t, targetOf(t, srv), LoadOptions{Concurrency: 2, Duration: 2 * time.Second})
	calls, errs := run.Requests()
	if len(run.Seconds) < 2 || len(run.Seconds) > 3 {
		t.Fatalf("%d points for a 2 s run", len(run.Seconds))
	}
	var sumCalls, sumErrs int64
	for i, s := range run.Seconds {
		sumCalls += s.Requests
		sumErrs += s.Errors
		if s.At != time.Duration(i)*time.Second || s.Width != time.Second {
			t.Errorf("point %d at %v, %v wide", i, s.At, s.Width)
		}
		if s.Requests == 0 || s.Latency == nil {
			t.Fatalf("second %d measured nothing: %+v", i, s)
		}
		if p50, p99 := s.Latency.ValueAtQuantile(50), s.Latency.ValueAtQuantile(99); p50 < 1000 || p99 < p50 {
			t.Errorf("second %d: p50 %d µs, p99 %d µs", i, p50, p99)
		}
	}
	if sumCalls != calls || sumErrs != errs || errs == 0 {
		t.Errorf("series sums to %d requests, %d errors; the run has %d, %d", sumCalls, sumErrs, calls, errs)
	}
}

// A stall in the open loop: the sends due while one request stalls wait
// behind it, and the second it ends in must show that wait.
func TestPerSecondSeriesShowsAStall(t *testing.T) {
	run, _ := stallOnce(t, 150, 300*time.Millisecond) // about 0.75 s in at 200 a second
	stalled, calm := 0, 0
	for _, s := range run.Seconds {
		if s.Latency == nil {
			continue
		}
		if s.Latency.ValueAtQuantile(99) >= 280_000 { // a point is within about 6%
			stalled++
		} else if s.Latency.ValueAtQuantile(99) < 100_000 {
			calm++
		}
	}
	if stalled == 0 || calm == 0 {
		for _, s := range run.Seconds {
			t.Logf("at %v: %d requests, p99 %d µs", s.At, s.Requests, s.Latency.ValueAtQuantile(99))
		}
		t.Errorf("%d seconds show the 300 ms stall, %d are calm; want both", stalled, calm)
	}
}

func TestPerSecondSeriesIsBounded(t *testing.T) {
	p := newPerSecond()
	h := newSecondHistogram()
	for sec := 0; sec < 24*3600; sec++ {
		h.Reset()
		h.RecordValue(int64(1000 + sec%7))
		p.add(sec, 2, int64(sec%2), h)
	}
	s := p.series(24 * time.Hour)
	if len(s) > result.MaxSeconds || len(s) < result.MaxSeconds/2 {
		t.Fatalf("%d points for a day", len(s))
	}
	var reqs, errs, counted int64
	for i, pt := range s {
		reqs += pt.Requests
		errs += pt.Errors
		counted += pt.Latency.TotalCount()
		if pt.At != time.Duration(i)*pt.Width || pt.Width != s[0].Width {
			t.Fatalf("point %d at %v, %v wide", i, pt.At, pt.Width)
		}
	}
	if reqs != 2*24*3600 || errs != 24*3600/2 || counted != 24*3600 {
		t.Errorf("merged points sum to %d requests, %d errors, %d latencies", reqs, errs, counted)
	}
}
