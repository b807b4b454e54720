package probes

import (
	"testing"
	"time"
)

// A monoClock reading is now: between two time.Now readings by the
// monotonic clock, and by the wall clock within a millisecond of them.
func TestMonoClockReadsNow(t *testing.T) {
	m := monoClock{time.Now()}
	time.Sleep(20 * time.Millisecond)
	before := time.Now()
	got := m.now()
	after := time.Now()
	if got.Before(before) || got.After(after) {
		t.Fatalf("reading %v is not between %v and %v", got, before, after)
	}
	if d := got.Round(0).Sub(before.Round(0)); d < -time.Millisecond || d > after.Sub(before)+time.Millisecond {
		t.Fatalf("wall time %v off by %v", got.Round(0), d)
	}
	if got.Sub(m.start) < 20*time.Millisecond {
		t.Fatalf("%v since the start, slept 20ms", got.Sub(m.start))
	}
}
