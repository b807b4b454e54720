package probes

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// LoadOptions say how hard and how long to load.
type LoadOptions struct {
	Concurrency int           // virtual clients, each with one connection (default 32)
	Rate        float64       // > 0: open loop at this many requests per second
	Duration    time.Duration // measured window (default 10s)
	Warmup      time.Duration // before the window; not recorded
	Timeout     time.Duration // one request (default 30s)
	// Progress, when set, is called about once a second with live counts.
	Progress func(Progress)
	// Profile, when set, profiles the target during the measured window.
	Profile *ProfileOptions
}

// Progress is the live state of a run, for the progress line.
type Progress struct {
	Elapsed          time.Duration
	Warmup           bool
	Requests, Errors int64
	RPS              float64 // over the last interval
}

// ErrTargetExited is the cause of a run cut short because the target's
// process ended.
var ErrTargetExited = errors.New("target exited")

// RunLoad drives ml against t and returns what it measured. It ends early,
// keeping what it measured, when ctx is cancelled (Ctrl-C) or the target's
// process exits; Run.Ended says why. The error is for runs that could not
// start (an unreachable target, a failed Prepare).
func RunLoad(ctx context.Context, ml Microload, t *Target, o LoadOptions) (*Run, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if t.Child != nil {
		go func() {
			select {
			case <-t.Child.Exited():
				cancel(fmt.Errorf("%w: %s", ErrTargetExited, t.Child.ExitReason()))
			case <-ctx.Done():
			}
		}()
	}

	seed := maphash.MakeSeed()
	measuring := &atomic.Bool{}
	live := &liveCounters{}
	kept := newSamples()
	setup := newClient(t, o.Timeout, seed, measuring, live, kept)
	if err := ml.Prepare(ctx, t, setup); err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return nil, cause
		}
		return nil, fmt.Errorf("%s: %w", ml.Name(), err)
	}
	setup.conn.Close()

	run := &Run{Microload: ml.Name(), Target: t.URL.String(), Mode: "closed", Concurrency: o.Concurrency,
		Rate: o.Rate, Errors: map[string]int64{}, Clients: o.Concurrency, CPUs: availableCPUs()}
	if o.Rate > 0 {
		run.Mode = "open"
	}
	if o.Profile != nil {
		if err := CheckPprof(ctx, o.Profile.PprofURL); err != nil {
			run.Warn("no-pprof", fmt.Sprintf("the target serves no profiles (%v): the run goes on without them", err))
			o.Profile = nil
		}
	}
	clients := make([]*Client, o.Concurrency)
	for i := range clients {
		clients[i] = newClient(t, o.Timeout, seed, measuring, live, kept)
	}

	var sampler *procSampler
	if t.Child != nil {
		sampler = startProcSampler(t.Child.PID(), 500*time.Millisecond)
	}
	start := time.Now()
	measureFrom := start.Add(o.Warmup)
	end := measureFrom.Add(o.Duration)
	var cpuAtStart, machineAtStart cpuSnapshot
	var targetCPUAtStart time.Duration
	var logLinesAtStart, logBytesAtStart int64
	opened := make(chan struct{})
	captured := make(chan *Profiles, 1)
	window := time.AfterFunc(o.Warmup, func() {
		cpuAtStart, machineAtStart = snapshotCPU()
		if sampler != nil {
			targetCPUAtStart = sampler.cpuNow()
			logLinesAtStart, logBytesAtStart = t.Child.Stderr.Counts()
		}
		if o.Profile != nil {
			go func() { captured <- captureProfiles(ctx, *o.Profile, o.Duration) }()
		}
		measuring.Store(true)
		close(opened)
	})

	stopProgress := startProgress(o.Progress, start, o.Warmup, live)
	var wg sync.WaitGroup
	var sessionErr atomic.Pointer[error]
	var next atomic.Int64 // open loop: index of the next intended send
	sched := openLoop{start: start}
	if o.Rate > 0 {
		sched.interval = time.Duration(float64(time.Second) / o.Rate)
	}
	for id, c := range clients {
		wg.Go(func() {
			sess, err := ml.NewSession(ctx, c, id)
			if err != nil {
				sessionErr.CompareAndSwap(nil, &err)
				return
			}
			for i := 0; ; i++ {
				if ctx.Err() != nil {
					return
				}
				if !time.Now().Before(end) {
					return
				}
				var intended time.Time
				if sched.interval > 0 {
					intended = sched.due(next.Add(1) - 1)
					if !intended.Before(end) {
						return
					}
					if d := time.Until(intended); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return
						}
					}
				}
				c.do(sess.Next(i), intended, false)
			}
		})
	}
	// Close connections on cancellation so that blocked requests return.
	stopInterrupt := context.AfterFunc(ctx, func() {
		for _, c := range clients {
			c.conn.Interrupt()
		}
	})
	wg.Wait()
	stopInterrupt()
	stopped := time.Now()
	stopProgress()
	measuring.Store(false)
	windowOpened := !window.Stop()
	if windowOpened {
		<-opened // the snapshots taken when the window opened are complete
		if o.Profile != nil {
			run.Profiles = <-captured
			for _, w := range run.Profiles.Warnings {
				run.Warn(w.Kind, w.Message)
			}
		}
	}

	if cause := context.Cause(ctx); cause != nil {
		run.Ended = cause.Error()
		kind := "ended-early"
		switch {
		case errors.Is(cause, context.Canceled):
			run.Ended, kind = "interrupted", "interrupted"
		case errors.Is(cause, ErrTargetExited):
			kind = "target-exited"
			run.TargetExit = t.Child.Exit()
		}
		run.Warn(kind, "the run ended early ("+run.Ended+"); the figures cover what was measured until then")
	}
	if errp := sessionErr.Load(); errp != nil && run.Ended == "" {
		run.Ended = "session set-up failed: " + (*errp).Error()
		run.Warn("session-failed", "a client could not set up its session ("+(*errp).Error()+"); it sent nothing")
	}
	run.Start = measureFrom
	if windowOpened {
		if stopped.After(end) {
			stopped = end
		}
		run.Duration = stopped.Sub(measureFrom)
		cpuAtEnd, machineAtEnd := snapshotCPU()
		run.GeneratorCPU = cpuAtEnd.self - cpuAtStart.self
		var targetCPU time.Duration
		if sampler != nil {
			targetCPU = sampler.cpuNow() - targetCPUAtStart
		}
		busy := machineAtEnd.machineBusy - machineAtStart.machineBusy
		others := busy - run.GeneratorCPU - targetCPU
		if t.Child == nil {
			others = 0 // a remote or unknown target: its CPU is not separable from the others'
		}
		if run.Duration > 0 {
			run.OthersCPU = max(0, others.Seconds()/run.Duration.Seconds())
		}
		if t.Child != nil {
			lines, bytes := t.Child.Stderr.Counts()
			run.LogLines, run.LogBytes = lines-logLinesAtStart, bytes-logBytesAtStart
		}
	}
	if sampler != nil {
		run.TargetProc = sampler.stop()
		if run.TargetProc != nil {
			run.TargetProc.CPU -= targetCPUAtStart
		}
	}

	index := map[string]*OpStats{}
	keys := map[string]*keyReplies{}
	for _, c := range clients {
		c.rec.mergeInto(run, index, keys)
		run.ConnsOpened += c.conn.Opened
		c.conn.Close()
	}
	run.Digests = digestsOf(keys, kept)
	judge(run, o, numCPU())
	return run, nil
}

// openLoop is the open loop's schedule: request k is due at start + k ×
// interval, whether or not the ones before it were answered.
type openLoop struct {
	start    time.Time
	interval time.Duration
}

func (s openLoop) due(k int64) time.Time { return s.start.Add(time.Duration(k) * s.interval) }

// judge adds the warnings a reader needs to trust the figures; machineCPUs
// is how many CPUs the machine has (probe, the target and others share them).
func judge(run *Run, o LoadOptions, machineCPUs int) {
	if run.Duration <= 0 {
		return
	}
	genCores := run.GeneratorCPU.Seconds() / run.Duration.Seconds()
	if run.CPUs > 0 && genCores >= 0.85*float64(run.CPUs) {
		run.Warn("generator-bound", fmt.Sprintf("probe used %.2f of its %d CPUs: the load generator, not the target, may be the limit", genCores, run.CPUs))
	} else if tp := run.TargetProc; tp != nil && run.CPUs > 0 {
		targetCores := tp.CPU.Seconds() / run.Duration.Seconds()
		if genCores > targetCores && genCores+targetCores+run.OthersCPU > 0.85*float64(machineCPUs) {
			run.Warn("generator-bound", fmt.Sprintf("probe used %.2f cores and the target %.2f on a saturated machine: the generator may be the limit", genCores, targetCores))
		}
	}
	if run.OthersCPU > 0.25 {
		run.Warn("machine-busy", fmt.Sprintf("other processes used %.2f cores during the run: figures may be noisy", run.OthersCPU))
	}
	if o.Rate > 0 {
		calls, _ := run.Requests()
		want := o.Rate * run.Duration.Seconds()
		if want > 0 && float64(calls) < 0.95*want {
			run.Warn("rate-not-kept", fmt.Sprintf("sent %d of the %.0f requests the rate asked for: more clients or a faster target are needed; latencies count the wait", calls, want))
		}
	}
	if run.Clients > 0 && run.ConnsOpened > 2*run.Clients {
		run.Warn("connection-churn", fmt.Sprintf("%d connections opened for %d clients: the target closes kept-alive connections", run.ConnsOpened, run.Clients))
	}
}

func startProgress(f func(Progress), start time.Time, warmup time.Duration, live *liveCounters) (stop func()) {
	if f == nil {
		return func() {}
	}
	var lastN int64
	last := time.Now()
	return Every(time.Second, func(now time.Time) {
		n := live.requests.Load()
		f(Progress{Elapsed: now.Sub(start), Warmup: now.Sub(start) < warmup, Requests: n, Errors: live.errors.Load(),
			RPS: float64(n-lastN) / now.Sub(last).Seconds()})
		lastN, last = n, now
	})
}
