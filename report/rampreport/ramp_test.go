package rampreport

import (
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/lib/stats"
)

func rampWindow(i int, rate, achieved, growth, mean float64, latencyMS int64, cpu float64) result.WindowStats {
	h := hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
	n := int64(rate * 10)
	for range n {
		h.RecordValue(latencyMS * 1000)
	}
	return result.WindowStats{Window: result.Window{From: time.Duration(i) * 10 * time.Second,
		To: time.Duration(i+1) * 10 * time.Second, Rate: rate},
		Started: n, Completed: int64(achieved * 10), Achieved: achieved, Latency: h, Steps: map[string]*hdrhistogram.Histogram{"s/a": h},
		InFlightMean: mean, InFlightMax: int(mean * 1.5), InFlightGrowth: growth,
		Target: &result.TargetSample{CPUCores: cpu, RSS: 200 << 20, Threads: 10, Connections: int(mean)}}
}

// The report says where the knee is and what grew past it, in the table,
// the Markdown and the page with its three plots.
func TestRampReport(t *testing.T) {
	run := &result.ArrivalRun{Windows: []result.WindowStats{
		rampWindow(0, 100, 100, 0, 2, 20, 0.4),
		rampWindow(1, 200, 200, 0.1, 4, 20, 0.8),
		rampWindow(2, 300, 240, 60, 300, 1500, 1.0),
		rampWindow(3, 400, 240, 160, 1200, 5000, 1.0),
	}, Ended: "stopped: past the knee (windows 3 and 4 did not hold)"}
	rule := stats.KneeRule{SLO: 1000, MaxErrors: 0.01}
	cfg := RampConfig{Target: "http://t", Schedule: result.Rates{Steps: []float64{100, 200, 300, 400}, Each: 10 * time.Second},
		Rule: rule, Cores: 1,
		Flows: []RampFlow{{Name: "s", Kind: "scenario", Weight: 1, Steps: []string{"s/a"}}}}
	r := RampOf(run, cfg, RampAnalysis{Knee: stats.FindKnee(LoadSteps(run.Windows), rule)})
	if !r.Knee.Found || r.Knee.Rate != 200 || r.Knee.Window != 2 || r.Failed() {
		t.Fatalf("knee %+v, failed %v", r.Knee, r.Failed())
	}
	says := strings.Join(r.Knee.Says, "\n")
	for _, want := range []string{"the knee: 200 sessions a second held", "sessions in flight grow by 60 a second", "p99 passes 1.00s",
		"target CPU 100% of its cores"} {
		if !strings.Contains(says, want) {
			t.Errorf("says %q: want %q", says, want)
		}
	}
	if len(r.Steps) != 1 || r.Steps[0].Calls != 3000 { // the windows up to the knee
		t.Errorf("steps %+v", r.Steps)
	}
	md, page := r.Markdown(), r.HTML()
	if !strings.Contains(md, "## The knee") || !strings.Contains(md, "no: sessions in flight grow") {
		t.Errorf("markdown:\n%s", md)
	}
	if strings.Count(page, "<svg") != 3 || !strings.Contains(page, "knee 200") || !strings.Contains(page, "SLO") {
		t.Errorf("page: %d plots", strings.Count(page, "<svg"))
	}
}

// A ramp that never passes its knee says so; one that fails at once says
// the knee lies below.
func TestRampKneeAtTheEdges(t *testing.T) {
	rule := stats.KneeRule{MaxErrors: 0.01}
	cfg := RampConfig{Target: "t", Schedule: result.Rates{Steps: []float64{100, 200}, Each: 10 * time.Second}, Rule: rule}
	held := &result.ArrivalRun{Windows: []result.WindowStats{rampWindow(0, 100, 100, 0, 2, 20, 0.2), rampWindow(1, 200, 200, 0, 4, 20, 0.4)}}
	r := RampOf(held, cfg, RampAnalysis{Knee: stats.FindKnee(LoadSteps(held.Windows), rule)})
	if r.Knee.Found || !strings.Contains(r.Knee.Says[0], "the knee lies above") {
		t.Errorf("%+v", r.Knee)
	}
	over := &result.ArrivalRun{Windows: []result.WindowStats{rampWindow(0, 100, 30, 70, 400, 9000, 1),
		rampWindow(1, 200, 30, 170, 1600, 20000, 1)}}
	r = RampOf(over, cfg, RampAnalysis{Knee: stats.FindKnee(LoadSteps(over.Windows), rule)})
	if !r.Knee.Found || r.Knee.Rate != 0 || !strings.Contains(r.Knee.Says[0], "the knee lies below") {
		t.Errorf("%+v", r.Knee)
	}
}
