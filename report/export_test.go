package report

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func newHistogramForTest() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
}
