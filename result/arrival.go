package result

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/pprof/profile"
)

// WindowStats are the figures of one window. Sessions belong to the
// window they were due in; completions to the one they ended in.
type WindowStats struct {
	Window
	Started   int64 // sessions due in the window and started
	Dropped   int64 // due, and not started: MaxInFlight sessions were running
	Failed    int64 // sessions due in the window that failed (a step's check, a timeout)
	Completed int64 // sessions that ended well during the window
	Achieved  float64
	Latency   *hdrhistogram.Histogram            // sessions due in the window, ended well: from due to end, µs
	Steps     map[string]*hdrhistogram.Histogram // each step of those sessions: from its send, µs
	Errors    map[string]int64
	// Sessions in flight, sampled every 100 ms: at the window's end, the
	// most, the mean, and their growth a second (least squares).
	InFlightEnd, InFlightMax     int
	InFlightMean, InFlightGrowth float64
	Target                       *TargetSample
	CPU                          *profile.Profile // the window's CPU profile, with Profile
	Wall                         *profile.Profile // and its wall-clock profile (fgprof)
}

// TargetSample is the target process over a window.
type TargetSample struct {
	CPUCores    float64 // CPU time over the window's length
	RSS         int64
	Threads     int
	FDs         int
	Connections int // its TCP connections with probe's clients
}

// InFlightSample is the number of sessions running at a moment.
type InFlightSample struct {
	At time.Duration
	N  int
}

// ArrivalRun is what an arrival load measured.
type ArrivalRun struct {
	Start    time.Time
	Windows  []WindowStats // the windows the run reached
	InFlight []InFlightSample
	Ended    string // why the run ended before its schedule did; "" when it did not
	Opened   int    // connections opened
	Mutex    *profile.Profile
	Block    *profile.Profile
	Wall     *profile.Profile
	Raw      map[string][]byte
	Warnings []Warning
}
