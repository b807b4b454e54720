package pipeline

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/contention"
	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/rampreport"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"

	"github.com/google/pprof/profile"
)

// RampOptions are one ramp (`probe ramp`): what to send to which target,
// on which schedule, and how to judge the windows.
type RampOptions struct {
	Target      *probes.Target
	Flows       []probes.Flow
	Rates       result.Rates
	SLO         time.Duration // the p99 a window must keep; 0: none
	MaxErrors   float64       // the share of sessions that may fail in a window that holds
	Stop        []RampStop    // when to end the ramp early; none: past the knee
	Timeout     time.Duration // one request
	MaxBody     int
	MaxInFlight int
	PID         int                    // the target's process; 0: unseen
	Profile     *target.ProfileOptions // nil: no profiles
	Rules       []analyzers.Rule
	Progress    func(probes.Progress)
	// Settle, with a stepped schedule, waits for a quiet target between
	// steps (ramp_settle.go); its Baseline comes first. nil: no waits.
	Settle *Settler
}

// RampStop is one rule that ends a ramp after a window.
type RampStop struct {
	Metric string  // past-knee, never, p99_ms, errors, in_flight
	Limit  float64 // errors as a share
}

var rampStopRE = regexp.MustCompile(`^(p99_ms|errors|in_flight)\s*>\s*([0-9.]+)(%?)$`)

// RampStops reads stop rules: past-knee, never, p99_ms>N, errors>N% (or a
// share), in_flight>N. None is past-knee.
func RampStops(list []string) ([]RampStop, error) {
	if len(list) == 0 {
		return []RampStop{{Metric: "past-knee"}}, nil
	}
	var out []RampStop
	for _, s := range list {
		s = strings.TrimSpace(s)
		switch s {
		case "past-knee", "never":
			out = append(out, RampStop{Metric: s})
			continue
		}
		m := rampStopRE.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("%q: want past-knee, never, p99_ms>N, errors>N%% or in_flight>N", s)
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not a number", s, m[2])
		}
		if m[3] == "%" {
			v /= 100
		}
		out = append(out, RampStop{Metric: m[1], Limit: v})
	}
	return out, nil
}

// RampKneeRule is how a window is judged: it holds while its p99 keeps
// slo (0: any) and at most maxErrors of its sessions fail.
func RampKneeRule(slo time.Duration, maxErrors float64) stats.KneeRule {
	return stats.KneeRule{SLO: float64(slo.Microseconds()) / 1000, MaxErrors: maxErrors}
}

// rampStopFunc is the ArrivalLoad's Stop: the first rule the windows so
// far break.
func rampStopFunc(rules []RampStop, knee stats.KneeRule) func([]result.WindowStats) string {
	return func(ws []result.WindowStats) string {
		steps := rampreport.LoadSteps(ws)
		last := steps[len(steps)-1]
		w := ws[len(ws)-1]
		for _, r := range rules {
			switch r.Metric {
			case "past-knee":
				if k := stats.FindKnee(steps, knee); k.Found && k.Past+1 < len(steps) {
					return fmt.Sprintf("stopped: past the knee (windows %d and %d did not hold)", k.Past+1, k.Past+2)
				}
			case "p99_ms":
				if last.P99 > r.Limit {
					return fmt.Sprintf("stopped: p99 %.0f ms > %g (--stop-when)", last.P99, r.Limit)
				}
			case "errors":
				if last.Errors > r.Limit {
					return fmt.Sprintf("stopped: %.1f%% of sessions failed (--stop-when)", 100*last.Errors)
				}
			case "in_flight":
				if float64(w.InFlightMax) > r.Limit {
					return fmt.Sprintf("stopped: %d sessions in flight (--stop-when)", w.InFlightMax)
				}
			}
		}
		return ""
	}
}

// Ramp runs the arrival engine on o's schedule, analyses the windows and
// makes the ramp's report. An error is a run that could not be made; a
// ramp that ended early is a report whose Ended says why.
func Ramp(ctx context.Context, o RampOptions) (*rampreport.Ramp, error) {
	knee := RampKneeRule(o.SLO, o.MaxErrors)
	stops := o.Stop
	if len(stops) == 0 {
		stops, _ = RampStops(nil)
	}
	load := &probes.ArrivalLoad{Target: o.Target, Mix: o.Flows, Rates: o.Rates, Timeout: o.Timeout, MaxBody: o.MaxBody,
		MaxInFlight: o.MaxInFlight, PID: o.PID, Stop: rampStopFunc(stops, knee), Progress: o.Progress, Profile: o.Profile}
	var run *result.ArrivalRun
	var waits []*report.Settle
	var err error
	if o.Settle != nil && len(o.Rates.Steps) > 1 {
		run, waits, err = steppedRun(ctx, *load, o.Settle)
	} else {
		run, err = load.Run(ctx)
	}
	if err != nil {
		return nil, err
	}
	cfg := rampreport.RampConfig{Target: o.Target.URL.String(), Schedule: o.Rates, Rule: knee, Cores: target.CPUsOf(o.PID)}
	for _, f := range o.Flows {
		kind := "scenario"
		if f.Scenario == nil {
			kind = "microload"
		}
		cfg.Flows = append(cfg.Flows, rampreport.RampFlow{Name: f.Name, Kind: kind, Weight: f.Weight, Steps: f.Steps()})
	}
	doc := rampreport.RampOf(run, cfg, analyzeRamp(run, knee, o.Rules))
	for i, st := range waits {
		if st == nil || i >= len(doc.Windows) {
			continue
		}
		doc.Windows[i].Settle = st
		if w, ok := SettleWarningBefore(st, fmt.Sprintf("step %d (%g/s)", i+1, doc.Windows[i].Offered)); ok {
			doc.Warnings = append(doc.Warnings, w)
		}
	}
	return doc, nil
}

// analyzeRamp is what the analyzers make of a ramp: the knee, each
// window's CPU by work, what requests waited on past the knee (fgprof),
// and the locks and waits that held them (mutex and block profiles, set
// against the time all the sessions took).
func analyzeRamp(run *result.ArrivalRun, rule stats.KneeRule, rules []analyzers.Rule) rampreport.RampAnalysis {
	a := rampreport.RampAnalysis{Knee: stats.FindKnee(rampreport.LoadSteps(run.Windows), rule)}
	var sessionTime time.Duration
	for _, w := range run.Windows {
		var top []analyzers.ShareOfWork
		if w.CPU != nil {
			if tl := analyzers.Timeline([]*profile.Profile{w.CPU}, rules); len(tl) > 0 {
				top = tl[0].Top
			}
		}
		a.Tops = append(a.Tops, top)
		sessionTime += time.Duration(w.Latency.Mean()*float64(w.Latency.TotalCount())) * time.Microsecond
	}
	var walls []*profile.Profile
	for _, w := range rampreport.PastWindows(run.Windows, a.Knee) {
		if w.Wall != nil {
			walls = append(walls, w.Wall)
		}
	}
	if len(walls) > 0 {
		if merged, err := profile.Merge(walls); err == nil {
			a.WallStates = contention.WallStates(merged)
		}
	}
	a.Findings = contention.Findings(run.Mutex, run.Block, sessionTime)
	return a
}
