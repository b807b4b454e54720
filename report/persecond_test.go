package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// goldenPerSecond gives a run three seconds: calm, one with a slow tail
// and two errors, and one in which nothing completed.
func goldenPerSecond(run *result.Run) {
	second := func(at int, errs int64, latenciesUS ...int64) result.Second {
		s := result.Second{At: time.Duration(at) * time.Second, Width: time.Second, Errors: errs}
		if len(latenciesUS) > 0 {
			s.Latency = hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 1)
		}
		for _, v := range latenciesUS {
			s.Latency.RecordValue(v)
			s.Requests++
		}
		return s
	}
	run.Seconds = []result.Second{second(0, 0, 20_000, 30_000, 40_000), second(1, 2, 30_000, 40_000, 300_000), second(2, 0)}
}

func TestPerSecondFromRun(t *testing.T) {
	run := sampleRun("sitemap", 1000, 2000)
	goldenPerSecond(run)
	r := FromRun(run, Analysis{})
	if len(r.PerSecond) != 3 {
		t.Fatalf("%d points from 3 seconds", len(r.PerSecond))
	}
	calm, slow, empty := r.PerSecond[0], r.PerSecond[1], r.PerSecond[2]
	if calm.T != 0 || slow.T != 1 || empty.T != 2 || slow.Requests != 3 || slow.Errors != 2 || empty.Requests != 0 {
		t.Errorf("points %+v", r.PerSecond)
	}
	// One significant digit: each figure within about 6%.
	if calm.P50 < 28 || calm.P50 > 32 || slow.P99 < 280 || slow.P99 > 320 || empty.P50 != 0 || empty.P99 != 0 {
		t.Errorf("percentiles %+v", r.PerSecond)
	}
	js, _ := r.JSON()
	var back struct {
		PerSecond []map[string]float64 `json:"per_second"`
	}
	if err := json.Unmarshal(js, &back); err != nil || len(back.PerSecond) != 3 {
		t.Fatalf("report.json's per_second: %v, %s", err, js)
	}
	for _, k := range []string{"t", "requests", "errors", "p50_ms", "p99_ms"} {
		if _, ok := back.PerSecond[1][k]; !ok {
			t.Errorf("a per_second point lacks %q", k)
		}
	}
	if js, _ := FromRun(sampleRun("page", 1000), Analysis{}).JSON(); strings.Contains(string(js), "per_second") {
		t.Error("a run without seconds writes per_second")
	}
}

// The page draws the run's own series; --during-writes' timeline is the
// fallback for a report that has none.
func TestSecondsPlotsPreferThePerSecondSeries(t *testing.T) {
	run := sampleRun("sitemap", 1000, 2000)
	goldenPerSecond(run)
	r := FromRun(run, Analysis{})
	r.Writes = &Writes{Timeline: []SecondReport{{Second: 0, Requests: 7000, P50: 40, P99: 95}}}
	plots := r.secondsPlots()
	if !strings.Contains(plots, `class="plots"`) || strings.Contains(plots, "7000") {
		t.Errorf("the page does not draw the per-second series:\n%s", plots)
	}
	r.PerSecond = nil
	if plots := r.secondsPlots(); !strings.Contains(plots, `class="plots"`) || !strings.Contains(plots, "7000") {
		t.Errorf("without the series the page does not draw --during-writes' timeline:\n%s", plots)
	}
}
