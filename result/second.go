package result

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Second is one point of a run's per-second series: the measured requests
// that completed in [At, At+Width) of the window, and their latencies
// (from the intended send time, as Latency's: open loop corrected).
type Second struct {
	At       time.Duration // from the window's opening
	Width    time.Duration // a second; wider once a long run passed MaxSeconds points
	Requests int64
	Errors   int64
	Latency  *hdrhistogram.Histogram // coarse (1 significant digit); nil when none completed
}

// MaxSeconds bounds a run's series: past it, points are merged pairwise
// into wider ones (a 24 h run keeps about 1,800 to 3,600 points).
const MaxSeconds = 3600
