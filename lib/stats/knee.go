package stats

import (
	"fmt"
	"math"
)

// LoadStep is one window of an arrival-rate ramp as the knee sees it.
type LoadStep struct {
	Rate           float64 // sessions a second offered
	Achieved       float64 // sessions a second that ended well
	Seconds        float64 // the window's length
	InFlightMean   float64 // sessions in flight, on average
	InFlightGrowth float64 // their growth a second (least squares)
	P99            float64 // session latency from its scheduled start, ms
	Errors         float64 // the share of its sessions that failed
	Sessions       int64   // sessions due in it
}

// KneeRule says when a window holds: sessions in flight bounded, p99 under
// SLO (ms; 0: no SLO), errors at most MaxErrors.
type KneeRule struct {
	SLO       float64
	MaxErrors float64
}

// Holds says whether the system held the window's rate, and if not why.
// Sessions in flight are unbounded when they grew during the window by
// more than three sessions and more than half their mean: under a rate
// the system keeps up with, they stay near rate × time (Little's law);
// past it they grow by the excess rate every second.
func (r KneeRule) Holds(s LoadStep) (bool, string) {
	grew := s.InFlightGrowth * s.Seconds
	switch {
	case s.Sessions == 0:
		return false, "no sessions"
	case grew > 3 && grew > 0.5*s.InFlightMean:
		return false, fmt.Sprintf("sessions in flight grow by %.1f a second", s.InFlightGrowth)
	case s.Rate > 0 && s.Achieved < 0.8*s.Rate && s.InFlightGrowth > 0:
		return false, fmt.Sprintf("%.0f sessions a second end, of %.0f started", s.Achieved, s.Rate)
	case r.SLO > 0 && s.P99 > r.SLO:
		return false, fmt.Sprintf("p99 %s passes the SLO of %s", ms(s.P99), ms(r.SLO))
	case s.Errors > r.MaxErrors:
		return false, fmt.Sprintf("%.1f%% of sessions fail", 100*s.Errors)
	}
	return true, ""
}

func ms(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// Knee is where a ramp stopped holding.
type Knee struct {
	// Index is the last window that held before the first that clearly
	// did not (two in a row, or the last window); -1 when the first
	// window did not hold.
	Index int
	Found bool    // a window past the knee was seen (else the system held all the way)
	Rate  float64 // the knee: the rate of window Index (0 when Index is -1)
	Past  int     // the first window past it, when Found
	Why   []string
}

// FindKnee finds the highest rate held before the system clearly gave
// way: the first window that does not hold, followed by another that does
// not (or the last), is past the knee; the knee is the window before it.
// One window that misses between windows that hold is a blip, not a knee.
func FindKnee(steps []LoadStep, rule KneeRule) Knee {
	k := Knee{Index: len(steps) - 1, Why: make([]string, len(steps))}
	held := make([]bool, len(steps))
	for i, s := range steps {
		held[i], k.Why[i] = rule.Holds(s)
	}
	for i := range steps {
		if held[i] || (i+1 < len(steps) && held[i+1]) {
			continue
		}
		k.Found, k.Past, k.Index = true, i, i-1
		break
	}
	if k.Index >= 0 {
		k.Rate = steps[k.Index].Rate
	}
	return k
}

// LittleL is Little's law's sessions in flight for a rate and a mean time
// in ms: L = λW.
func LittleL(rate, meanMS float64) float64 {
	if math.IsNaN(meanMS) {
		return 0
	}
	return rate * meanMS / 1000
}
