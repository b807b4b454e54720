package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
)

// A stepped ramp with a Settler waits for a quiet target before each step
// after the first, and its steps join into one ramp on the schedule's
// clock: windows in order, sessions all counted, the waits on the windows
// they preceded, a target that never calmed a warning naming the step.
func TestSteppedRampWaitsForAQuietTargetBetweenSteps(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	target := &probes.Target{URL: u}

	f := &fakeTarget{now: time.Unix(0, 0), idle: 0.02, busy: 1.5}
	settle := f.settler(3 * time.Second)
	settle.Baseline(context.Background())
	waits := 0
	stepsSeen := []int{}
	settle.Busy = func() { waits++ }
	step := 0
	o := RampOptions{Target: target, Rates: result.Rates{Steps: []float64{10, 20, 30}, Each: time.Second},
		Flows: []probes.Flow{{Name: "get", Weight: 1,
			Scenario: &probes.Scenario{Name: "get", Steps: []probes.Step{{Name: "get", Method: "GET", Path: "/"}}}}},
		Timeout: 5 * time.Second, Stop: []RampStop{{Metric: "never"}}, Settle: settle}
	// Each step's end makes the fake target busy, as abandoned requests
	// would: 2 s after the first (the wait ends quiet), 10 s after the
	// second (past the 3 s bound: the wait gives up).
	busyFor := []time.Duration{2 * time.Second, 10 * time.Second, 0}
	knee := RampKneeRule(0, 0.01)
	inner := rampStopFunc([]RampStop{{Metric: "never"}}, knee)
	load := probes.ArrivalLoad{Target: target, Mix: o.Flows, Rates: o.Rates, Timeout: o.Timeout,
		Stop: func(ws []result.WindowStats) string {
			stepsSeen = append(stepsSeen, len(ws))
			f.busyUntil = f.now.Add(busyFor[step])
			step++
			return inner(ws)
		}}
	run, ws, err := steppedRun(context.Background(), load, settle)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Windows) != 3 || run.Ended != "" {
		t.Fatalf("%d windows, ended %q: want the three steps joined", len(run.Windows), run.Ended)
	}
	for i, w := range run.Windows {
		if w.From != time.Duration(i)*time.Second || w.To != time.Duration(i+1)*time.Second || w.Rate != []float64{10, 20, 30}[i] {
			t.Errorf("window %d: %v–%v at %g/s: want step %d on the schedule's clock", i+1, w.From, w.To, w.Rate, i+1)
		}
	}
	// Each step's arrivals are its rate for a second (one more when the
	// schedule's float sum lands just short of its end).
	var started int64
	for i, w := range run.Windows {
		if want := int64(10 * (i + 1)); w.Started < want || w.Started > want+1 {
			t.Errorf("window %d started %d sessions, want %d", i+1, w.Started, want)
		}
		started += w.Started
	}
	if calls.Load() != started {
		t.Errorf("%d sessions started, %d calls", started, calls.Load())
	}
	// Stop saw the windows so far, not only its own step's.
	if fmt.Sprint(stepsSeen) != "[1 2 3]" {
		t.Errorf("Stop saw %v windows at each step's end, want [1 2 3]", stepsSeen)
	}
	if len(ws) != 3 || ws[0] != nil || ws[1] == nil || ws[2] == nil {
		t.Fatalf("waits %v: want none before the first step, one before each other", ws)
	}
	if !ws[1].Quiet || ws[1].WaitedS < 2 || ws[1].WaitedS > 3 {
		t.Errorf("wait before step 2: %+v: want quiet after the 2 s of work", ws[1])
	}
	if ws[2].Quiet || ws[2].WaitedS < 3 {
		t.Errorf("wait before step 3: %+v: want not quiet after the 3 s bound", ws[2])
	}
	if waits != 2 {
		t.Errorf("told busy %d times, want twice", waits)
	}
	// Through Ramp: the waits are on the report's windows, the busy one a
	// warning naming its step.
	f.busyUntil = time.Time{}
	doc, err := Ramp(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Windows) != 3 || doc.Windows[0].Settle != nil || doc.Windows[1].Settle == nil {
		t.Fatalf("report windows %d, settles %v %v", len(doc.Windows), doc.Windows[0].Settle, doc.Windows[1].Settle)
	}
	if !strings.Contains(doc.Markdown(), "quiet after") {
		t.Errorf("the windows table does not show the waits:\n%s", doc.Markdown())
	}
}
