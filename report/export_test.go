package report

import (
	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/probehq/probe/report/internal/reporttest"
)

func newHistogramForTest() *hdrhistogram.Histogram { return reporttest.NewHistogram() }
