package target

import (
	"context"
	"slices"
	"time"

	"github.com/probehq/probe/lib/stats"

	"github.com/probehq/probe/result"
)

// costLegs are the stretches of a run's CPU windows and the gaps between
// them, each with what the target spent and answered over it.
type costLegs struct {
	read  func() (time.Duration, int64, bool)
	legs  []result.CostLeg
	at    time.Time
	cpu   time.Duration
	count int64
	ok    bool
}

// newCostLegs is nil unless o can read the target's CPU and answers.
func newCostLegs(o ProfileOptions) *costLegs {
	if o.Reading == nil {
		return nil
	}
	return &costLegs{read: o.Reading}
}

// start begins a stretch.
func (l *costLegs) start() {
	if l == nil {
		return
	}
	l.at = time.Now()
	l.cpu, l.count, l.ok = l.read()
}

// settleAfterWindow is how long after a CPU window's fetch its stretch
// still runs: the handler's last writes, not the gap's.
const settleAfterWindow = 100 * time.Millisecond

// end closes the stretch begun last.
func (l *costLegs) end(profiled bool) {
	if l == nil || !l.ok {
		return
	}
	cpu, count, ok := l.read()
	if !ok || count <= l.count {
		return
	}
	l.legs = append(l.legs, result.CostLeg{Profiled: profiled, Seconds: time.Since(l.at).Seconds(),
		CPU: (cpu - l.cpu).Seconds(), Answered: count - l.count})
}

// gap leaves the target unprofiled for d, a stretch of its own.
func (l *costLegs) gap(ctx context.Context, d time.Duration) {
	l.start()
	select {
	case <-time.After(d):
		l.end(false)
	case <-ctx.Done():
	}
}

// cost compares the stretches (nil without both kinds).
func (l *costLegs) cost() *result.ProfilingCost {
	if l == nil {
		return nil
	}
	return CostOf(l.legs)
}

// CostOf is what profiling cost over legs: for each unprofiled stretch
// and each profiled one beside it (the drift between them least), the
// profiled CPU per answered request over the unprofiled less one; the
// overhead is their median, the interval their least and greatest (nil
// with fewer than two such pairs).
func CostOf(legs []result.CostLeg) *result.ProfilingCost {
	// The first window is left out: it holds the run's one-off profiling
	// work (the heap snapshot after a GC, the leak profile's baseline),
	// which would read as a steady cost per request.
	first := slices.IndexFunc(legs, func(l result.CostLeg) bool { return l.Profiled })
	var ratios []float64
	for i, l := range legs {
		if l.Profiled || l.CPU <= 0 || l.Answered == 0 {
			continue
		}
		for _, j := range []int{i - 1, i + 1} {
			if j >= 0 && j < len(legs) && j != first && legs[j].Profiled && legs[j].CPU > 0 && legs[j].Answered > 0 {
				ratios = append(ratios, perAnswer(legs[j])/perAnswer(l)-1)
			}
		}
	}
	if len(ratios) < 2 {
		return nil // one pair is no figure: its noise alone can read ±50 % (a 10 s run has one)
	}
	slices.Sort(ratios)
	return &result.ProfilingCost{Overhead: stats.Median(ratios), Interval: [2]float64{ratios[0], ratios[len(ratios)-1]}, Legs: legs}
}

func perAnswer(l result.CostLeg) float64 { return l.CPU / float64(l.Answered) }
