package cli

import (
	"slices"
	"testing"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/abreport"
	"github.com/probehq/probe/thresholds"
)

// The metrics thresholds knows are the ones the reports give: every run
// metric is filled from a report that has them all, and the before/after
// metrics are report's.
func TestThresholdMetricsMatchTheReports(t *testing.T) {
	r := &report.Run{Microload: "m", TargetProcess: &report.Process{}, Writes: &report.Writes{}}
	r.Latency.Requests = 10
	r.Writes.During.Requests = 1
	r.Writes.WriteMS.N = 1
	f := shared.RunFigures(r)
	for _, m := range thresholds.RunMetrics {
		if _, ok := f.Values[m]; !ok {
			t.Errorf("run metric %s is not read from a report", m)
		}
	}
	if len(f.Values) != len(thresholds.RunMetrics) {
		t.Errorf("figures %v, metrics %v", f.Values, thresholds.RunMetrics)
	}
	var names []string
	for _, m := range abreport.Metrics() {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, thresholds.ABMetrics) {
		t.Errorf("report compares %v, thresholds knows %v", names, thresholds.ABMetrics)
	}
}
