package result

import (
	"time"

	"github.com/google/pprof/profile"
)

// Leak sources: what a run's leak check read.
const (
	LeakProfile    = "goroutineleak"   // the runtime's leak profile (Go 1.26 with GOEXPERIMENT, 1.27 on)
	LeakGoroutines = "goroutine-count" // the goroutine profile's total at each end: no leak profile served
)

// Leaks is what the target's goroutines left behind over a profiled run.
type Leaks struct {
	Source string // LeakProfile or LeakGoroutines
	// Grown is, for LeakProfile, the leaked goroutines that were not
	// leaked at the start (the delta of the two leak profiles); nil: none.
	Grown *profile.Profile
	// Creators map a leaked goroutine's entry function to the function
	// whose go statement started it (from the goroutine dump; the leak
	// profile's stacks end at the entry).
	Creators map[string]string
	// Before and After are the leaked goroutines (LeakProfile) or all the
	// target's goroutines (LeakGoroutines) at each end.
	Before, After int64
	Settle        time.Duration // LeakGoroutines: the wait after the window before the second count
}
