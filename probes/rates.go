package probes

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rates is an arrival schedule: new sessions a second over time. It is the
// open model of seed 003 — users do not queue behind each other, so a new
// session starts on schedule whether earlier ones have finished or not.
// Either Steps (each rate held for Each) or a linear ramp From → To over
// Over.
type Rates struct {
	Steps    []float64
	Each     time.Duration
	From, To float64
	Over     time.Duration
}

// maxArrivalRate bounds a schedule's rate: a goroutine a session.
const maxArrivalRate = 100_000

// ParseRamp reads "10:500/5m": from 10 to 500 sessions a second over 5 min.
func ParseRamp(s string) (Rates, error) {
	bad := func(why string) (Rates, error) {
		return Rates{}, fmt.Errorf("--ramp %q: %s (want FROM:TO/DURATION, like 10:500/5m)", s, why)
	}
	rates, dur, ok := strings.Cut(s, "/")
	from, to, ok2 := strings.Cut(rates, ":")
	if !ok || !ok2 {
		return bad("no FROM:TO/DURATION")
	}
	f, err1 := strconv.ParseFloat(from, 64)
	t, err2 := strconv.ParseFloat(to, 64)
	d, err3 := time.ParseDuration(dur)
	switch {
	case err1 != nil || err2 != nil || err3 != nil:
		return bad("not numbers and a duration")
	case !(f > 0) || !(t > 0) || t > maxArrivalRate || math.IsInf(f, 0):
		return bad(fmt.Sprintf("rates must be above 0 and at most %d a second", maxArrivalRate))
	case t <= f:
		return bad("the end is not above the start: a ramp goes up")
	case d < 5*time.Second || d > 24*time.Hour:
		return bad("the duration must be 5s to 24h")
	}
	return Rates{From: f, To: t, Over: d}, nil
}

// ParseSteps reads "50,100,200,400/60s": each rate held for 60 s.
func ParseSteps(s string) (Rates, error) {
	bad := func(why string) (Rates, error) {
		return Rates{}, fmt.Errorf("--steps %q: %s (want RATE,RATE,…/DURATION, like 50,100,200,400/60s)", s, why)
	}
	list, dur, ok := strings.Cut(s, "/")
	if !ok {
		return bad("no /DURATION")
	}
	d, err := time.ParseDuration(dur)
	if err != nil || d < time.Second || d > time.Hour {
		return bad("each step must last 1s to 1h")
	}
	var out []float64
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || v > maxArrivalRate {
			return bad(fmt.Sprintf("%q is no rate above 0 and at most %d a second", f, maxArrivalRate))
		}
		if len(out) > 0 && v <= out[len(out)-1] {
			return bad("the rates must increase")
		}
		out = append(out, v)
	}
	if len(out) < 2 {
		return bad("two steps at least: a knee lies between rates")
	}
	return Rates{Steps: out, Each: d}, nil
}

// Duration is how long the schedule lasts.
func (r Rates) Duration() time.Duration {
	if len(r.Steps) > 0 {
		return time.Duration(len(r.Steps)) * r.Each
	}
	return r.Over
}

// At is the rate at t from the start.
func (r Rates) At(t time.Duration) float64 {
	if len(r.Steps) > 0 {
		i := min(len(r.Steps)-1, max(0, int(t/r.Each)))
		return r.Steps[i]
	}
	f := min(1, max(0, float64(t)/float64(r.Over)))
	return r.From + (r.To-r.From)*f
}

// Window is a stretch of the schedule reported on its own: a step, or a
// part of a ramp.
type Window struct {
	From, To time.Duration
	Rate     float64 // the rate asked for, on average over the window
}

// Windows cut the schedule for the report: each step is one; a ramp is
// cut in windows of 5 s or more, 5 to 30 of them.
func (r Rates) Windows() []Window {
	if len(r.Steps) > 0 {
		out := make([]Window, len(r.Steps))
		for i, v := range r.Steps {
			out[i] = Window{From: time.Duration(i) * r.Each, To: time.Duration(i+1) * r.Each, Rate: v}
		}
		return out
	}
	n := min(30, max(5, int(r.Over/(5*time.Second))))
	out := make([]Window, n)
	for i := range out {
		from, to := r.Over*time.Duration(i)/time.Duration(n), r.Over*time.Duration(i+1)/time.Duration(n)
		out[i] = Window{From: from, To: to, Rate: (r.At(from) + r.At(to)) / 2}
	}
	return out
}

// Arrivals are the scheduled starts, evenly spaced at the rate of the
// moment (as k6's arrival-rate executors space them): a deterministic
// schedule, so that two runs offer the same load.
func (r Rates) Arrivals() []time.Duration {
	var out []time.Duration
	end := r.Duration()
	for t := time.Duration(0); t < end; {
		out = append(out, t)
		t += time.Duration(float64(time.Second) / r.At(t))
	}
	return out
}

// String is the schedule as its flag reads.
func (r Rates) String() string {
	if len(r.Steps) > 0 {
		var parts []string
		for _, v := range r.Steps {
			parts = append(parts, strconv.FormatFloat(v, 'f', -1, 64))
		}
		return fmt.Sprintf("steps %s/%v", strings.Join(parts, ","), r.Each)
	}
	return fmt.Sprintf("ramp %g:%g/%v", r.From, r.To, r.Over)
}
