package pipeline

import (
	"context"
	"time"

	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// What --profile costs the target is measured, when asked
// (--profiling-overhead), as what a user would see: the microload's
// throughput with and without the profiling, in legs that take turns
// (off, on, off, on …) so that a machine's drift falls on both sides.

// ProfilingOverhead runs ml in rounds of two legs of leg each, one without
// profiling and one with o.Profile, and compares their medians of
// requests that ended well a second.
func (p *Pipeline) ProfilingOverhead(ctx context.Context, ml probes.Microload, t *probes.Target, o probes.LoadOptions,
	leg time.Duration, rounds int) (*report.ProfilingOverhead, error) {
	out := &report.ProfilingOverhead{LegS: leg.Seconds(), Rounds: rounds}
	var off, on []float64
	for r := 0; r < rounds && ctx.Err() == nil; r++ {
		for _, profiled := range []bool{false, true} {
			lo := o
			lo.Duration, lo.Warmup, lo.Progress = leg, min(o.Warmup, leg/4), nil
			lo.Profile = nil
			if profiled && o.Profile != nil {
				po := *o.Profile
				po.Window, po.Gap = max(time.Second, leg/2), -1 // profiled throughout: the leg is the profiled side
				lo.Profile = &po
			}
			run, err := p.o.Load(ctx, ml, t, lo)
			if err != nil {
				return nil, err
			}
			if run.Ended != "" { // a leg cut short measures nothing comparable
				return out, nil
			}
			calls, errs := run.Requests()
			rps := float64(calls-errs) / max(run.Duration.Seconds(), 1e-9)
			out.Legs = append(out.Legs, report.OverheadLeg{Profiled: profiled, RPS: rps})
			if profiled {
				on = append(on, rps)
			} else {
				off = append(off, rps)
			}
		}
	}
	if len(on) == 0 || len(off) == 0 {
		return out, nil
	}
	out.OffRPS, out.OnRPS = stats.Median(off), stats.Median(on)
	if out.OffRPS > 0 {
		out.Loss = 1 - out.OnRPS/out.OffRPS
	}
	return out, nil
}
