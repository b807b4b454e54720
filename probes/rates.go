package probes

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/result"
)

// maxArrivalRate bounds a schedule's rate: a goroutine a session.
const maxArrivalRate = 100_000

// ParseRamp reads "10:500/5m": from 10 to 500 sessions a second over 5 min.
func ParseRamp(s string) (result.Rates, error) {
	bad := func(why string) (result.Rates, error) {
		return result.Rates{}, fmt.Errorf("--ramp %q: %s (want FROM:TO/DURATION, like 10:500/5m)", s, why)
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
	return result.Rates{From: f, To: t, Over: d}, nil
}

// ParseSteps reads "50,100,200,400/60s": each rate held for 60 s.
func ParseSteps(s string) (result.Rates, error) {
	bad := func(why string) (result.Rates, error) {
		return result.Rates{}, fmt.Errorf("--steps %q: %s (want RATE,RATE,…/DURATION, like 50,100,200,400/60s)", s, why)
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
	return result.Rates{Steps: out, Each: d}, nil
}
