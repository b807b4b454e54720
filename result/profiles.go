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
}

// Contention is what a target's mutex and block profiles counted over a
// window: the deltas of their counts at both ends (nil: not recorded).
type Contention struct {
	Mutex, Block *profile.Profile
	Raw          map[string][]byte
	Warnings     []Warning
}
