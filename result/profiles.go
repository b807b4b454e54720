package result

import "github.com/google/pprof/profile"

// Profiles is what the target's profilers saw during the measured window.
type Profiles struct {
	CPU       *profile.Profile   // the windows merged
	Windows   []*profile.Profile // consecutive CPU profiles, in order
	Allocs    *profile.Profile   // allocations during the window: the delta of two heap profiles each taken after a GC
	Wall      *profile.Profile   // fgprof's wall-clock profile
	Goroutine *profile.Profile   // goroutines at the end
	Leaks     *Leaks             // the leak check over the window (nil: not made)
	Raw       map[string][]byte  // file name → bytes as fetched (gzipped protobuf)
	Warnings  []Warning
	// CPUWindowError is why the CPU windows stopped before the run's end
	// (nil: they covered it); the windows after it were not fetched.
	CPUWindowError error
	// Unanswered: the goroutine profile at the end failed too; the target
	// had stopped answering /debug/pprof.
	Unanswered bool
	// Cost is what profiling cost the target, from the unprofiled gaps
	// between CPU windows (nil: not measured).
	Cost *ProfilingCost
}

// ProfilingCost is the target's CPU per answered request while its CPU
// was profiled against while it was not, in the same run: stretches that
// take turns (a CPU window, then a gap), so that drift falls on both.
type ProfilingCost struct {
	// Overhead is profiled CPU per request ÷ unprofiled − 1, over all the
	// stretches of each kind (0.01: profiling cost 1 % more CPU a request;
	// negative: within the noise).
	Overhead float64 `json:"overhead"`
	// Interval spans the ratios of each unprofiled stretch against each
	// profiled stretch beside it, less one.
	Interval [2]float64 `json:"interval"`
	Legs     []CostLeg  `json:"legs"`
}

// CostLeg is one stretch of the run, profiled or not.
type CostLeg struct {
	Profiled bool    `json:"profiled"`
	Seconds  float64 `json:"s"`
	CPU      float64 `json:"cpu_s"`    // the target process's CPU over it
	Answered int64   `json:"answered"` // requests answered without error over it
}

// Contention is what a target's mutex and block profiles counted over a
// window: the deltas of their counts at both ends (nil: not recorded).
type Contention struct {
	Mutex, Block *profile.Profile
	Raw          map[string][]byte
	Warnings     []Warning
}
