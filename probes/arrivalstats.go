package probes

// The figures of an arrival load's windows: sessions in flight, the
// target process, and each window's statistics.

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/lib/tick"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// sample counts the sessions in flight every 100 ms.
func (e *arrivalEngine) sample() (stop func()) {
	e.sampleProc()
	return tick.Every(100*time.Millisecond, func(now time.Time) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if len(e.inflight) < 1_000_000 {
			e.inflight = append(e.inflight, result.InFlightSample{At: now.Sub(e.start), N: int(e.running.Load())})
		}
	})
}

// sampleProc reads the target process, at each window's end.
func (e *arrivalEngine) sampleProc() {
	if e.l.PID == 0 {
		return
	}
	s, err := target.ReadProc(e.l.PID)
	if err != nil {
		return
	}
	s.Conns = target.Connections(e.l.Target.Addr())
	e.mu.Lock()
	defer e.mu.Unlock()
	e.procs = append(e.procs, s)
	e.procAt = append(e.procAt, time.Now())
}

// windowStats are the windows as measured so far.
func (e *arrivalEngine) windowStats() []result.WindowStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]result.WindowStats, len(e.stats))
	for i, st := range e.stats {
		w := st
		w.Latency = hdrhistogram.Import(st.Latency.Export())
		w.Steps = map[string]*hdrhistogram.Histogram{}
		for k, h := range st.Steps {
			w.Steps[k] = hdrhistogram.Import(h.Export())
		}
		w.Errors = map[string]int64{}
		for k, v := range st.Errors {
			w.Errors[k] = v
		}
		length := (w.To - w.From).Seconds()
		w.Achieved = float64(w.Completed) / length
		var xs, ys []float64
		for _, s := range e.inflight {
			if s.At >= w.From && s.At < w.To {
				xs = append(xs, s.At.Seconds())
				ys = append(ys, float64(s.N))
				w.InFlightMax = max(w.InFlightMax, s.N)
				w.InFlightEnd = s.N
			}
		}
		if len(ys) > 0 {
			w.InFlightMean = mean(ys)
			w.InFlightGrowth = slope(xs, ys)
		}
		if i+1 < len(e.procs) {
			a, b := e.procs[i], e.procs[i+1]
			w.Target = &result.TargetSample{CPUCores: (b.CPU - a.CPU).Seconds() / e.procAt[i+1].Sub(e.procAt[i]).Seconds(),
				RSS: b.RSS, Threads: b.Threads, FDs: b.FDs, Connections: b.Conns}
		}
		out[i] = w
	}
	return out
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// slope is the least-squares slope of ys on xs.
func slope(xs, ys []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	mx, my := mean(xs), mean(ys)
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return num / den
}
