package result

import (
	"fmt"
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
