package probes

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/probehq/probe/result"
)

// newSecondHistogram is a point's histogram: one significant digit (each
// value within about 6%) keeps it to about 3 KB, enough for p50 and p99 a
// second.
func newSecondHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 1)
}

// perSecond is the run's series, shared by the clients: each adds its
// second when it moves on to the next, so the lock is taken about once a
// second per client, never per request.
type perSecond struct {
	mu     sync.Mutex
	width  int // seconds a point covers
	points []result.Second
}

func newPerSecond() *perSecond { return &perSecond{width: 1} }

func (p *perSecond) add(sec int, requests, errors int64, h *hdrhistogram.Histogram) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for sec/p.width >= result.MaxSeconds {
		p.widen()
	}
	i := sec / p.width
	for len(p.points) <= i {
		n := len(p.points)
		p.points = append(p.points, result.Second{At: time.Duration(n*p.width) * time.Second, Width: time.Duration(p.width) * time.Second})
	}
	pt := &p.points[i]
	pt.Requests += requests
	pt.Errors += errors
	if h.TotalCount() > 0 {
		if pt.Latency == nil {
			pt.Latency = newSecondHistogram()
		}
		pt.Latency.Merge(h)
	}
}

// widen halves the points, each new one the sum of two.
func (p *perSecond) widen() {
	p.width *= 2
	merged := make([]result.Second, 0, (len(p.points)+1)/2)
	for i := 0; i < len(p.points); i += 2 {
		pt := p.points[i]
		pt.Width = time.Duration(p.width) * time.Second
		if i+1 < len(p.points) {
			next := p.points[i+1]
			pt.Requests += next.Requests
			pt.Errors += next.Errors
			if next.Latency != nil {
				if pt.Latency == nil {
					pt.Latency = next.Latency
				} else {
					pt.Latency.Merge(next.Latency)
				}
			}
		}
		merged = append(merged, pt)
	}
	p.points = merged
}

// series is the points up to span (the measured window), empty seconds
// included: a stalled second shows as a zero, not as a gap.
func (p *perSecond) series(span time.Duration) []result.Second {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := time.Duration(p.width) * time.Second
	n := max(len(p.points), int((span+w-1)/w))
	out := make([]result.Second, n)
	copy(out, p.points)
	for i := len(p.points); i < n; i++ {
		out[i] = result.Second{At: time.Duration(i) * w, Width: w}
	}
	return out
}

// secondTally is one client's current second, handed to the shared series
// when a request completes in a later one.
type secondTally struct {
	shared   *perSecond
	from     time.Time // the window's opening
	last     int       // the window's last second: later completions count in it
	sec      int
	requests int64
	errors   int64
	latency  histBatch
}

func newSecondTally(shared *perSecond, from time.Time, window time.Duration) secondTally {
	return secondTally{shared: shared, from: from, last: max(0, int((window-1)/time.Second)), latency: newHistBatch(newSecondHistogram())}
}

// record counts one measured request that completed at done, latency after
// it was due. A client with no series (the arrival engine's) counts nothing:
// it allocates no histogram it would not use.
func (t *secondTally) record(done time.Time, latency time.Duration, failed bool) {
	if t.shared == nil {
		return
	}
	sec := min(max(0, int(done.Sub(t.from)/time.Second)), t.last)
	if sec != t.sec {
		t.flush()
		t.sec = sec
	}
	t.requests++
	if failed {
		t.errors++
	}
	t.latency.record(max(1, latency.Microseconds()))
}

func (t *secondTally) flush() {
	if t.shared == nil || t.requests == 0 {
		return
	}
	t.latency.flush()
	t.shared.add(t.sec, t.requests, t.errors, t.latency.h)
	t.requests, t.errors = 0, 0
	t.latency.h.Reset()
}
