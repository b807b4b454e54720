package probes

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/machine"
	"github.com/probehq/probe/lib/tick"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// LoadOptions say how hard and how long to load.
type LoadOptions struct {
	Concurrency int           // virtual clients, each with one connection (default 32)
	Rate        float64       // > 0: open loop at this many requests per second
	Duration    time.Duration // measured window (default 10s)
	Warmup      time.Duration // before the window; not recorded
	Timeout     time.Duration // one request (default 30s)
	// Requests > 0 ends the run after this many requests in all (or at
	// Duration, whichever comes first): a run of one request is sent
	// whatever the clients' set-up costs, where a 1 ms window was not.
	Requests    int64
	MaxBody     int   // largest reply body, as received and decoded (default h1.DefaultMaxBody)
	ReplyMemory int64 // what all clients may hold for replies at once beyond 1 MiB each (default h1.DefaultBudget)
	// During, when set, runs alongside the measured window (writes while
	// reads are measured): it starts as the window opens, its context ends
	// with the window, and the run waits for it to return.
	During func(ctx context.Context)
	// RequestTimes keeps each measured request's due time and latency
	// (Run.RequestTimes), for a timeline; at most maxRequestTimes in a run.
	RequestTimes bool
	// Progress, when set, is called about once a second with live counts.
	Progress func(Progress)
	// Profile, when set, profiles the target during the measured window.
	Profile *target.ProfileOptions
}

// Progress is the live state of a run, for the progress line.
type Progress struct {
	Elapsed          time.Duration
	Warmup           bool
	Requests, Errors int64
	RPS              float64 // replies that passed their checks, per second over the last interval
}

// maxRequestTimes bounds the requests a run keeps one by one.
const maxRequestTimes = 4_000_000

// ErrTargetExited is the cause of a run cut short because the target's
// process ended.
var ErrTargetExited = errors.New("target exited")

// Prepare runs ml's Prepare against t, unmeasured: what a microload finds
// of the target's shape (probe init writes it down).
func Prepare(ctx context.Context, ml Microload, t *Target, timeout time.Duration) error {
	c := NewClient(t, timeout)
	defer c.Close()
	return ml.Prepare(ctx, t, c)
}

// RunLoad drives ml against t and returns what it measured. It ends early,
// keeping what it measured, when ctx is cancelled (Ctrl-C) or the target's
// process exits; Run.Ended says why. The error is for runs that could not
// start (an unreachable target, a failed Prepare).
func RunLoad(ctx context.Context, ml Microload, t *Target, o LoadOptions) (*result.Run, error) {
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
	if o.ReplyMemory <= 0 {
		o.ReplyMemory = h1.DefaultBudget
	}
	budget := h1.NewBudget(o.ReplyMemory)
	measuring := &atomic.Bool{}
	live := &liveCounters{}
	kept := newSamples()
	setup := newClient(t, o.Timeout, o.MaxBody, budget, seed, measuring, live, kept)
	if err := ml.Prepare(ctx, t, setup); err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return nil, cause
		}
		if IsNotFound(err) {
			return nil, err // it names its microload
		}
		return nil, fmt.Errorf("%s: %w", ml.Name(), err)
	}
	setup.conn.Close()
	var lane *result.MCPLane
	if m, ok := ml.(MCPSpeaker); ok {
		l := m.MCPLane()
		lane = &l
	}
	h2Opened0, h2Dropped0 := t.h2Counts() // HTTP/2's connections are the target's: the run's are the difference

	run := &result.Run{Microload: ml.Name(), Target: t.URL.String(), Mode: "closed", Concurrency: o.Concurrency,
		Rate: o.Rate, Errors: map[string]int64{}, Clients: o.Concurrency, CPUs: target.AvailableCPUs(), MachineCPUs: machine.CPUs(), Timeout: o.Timeout,
		Protocol: t.Protocol(), MCP: lane}
	if o.Rate > 0 {
		run.Mode = "open"
	}
	// The target's process (its CPU, RSS, threads, open files) and its
	// profiles, as target.Open finds them for this run.
	spec := target.Spec{URL: t.URL, Child: t.Child}
	if o.Profile != nil {
		spec.Pprof = o.Profile.PprofURL
	}
	server := target.Open(ctx, spec)
	for _, w := range server.Warnings {
		run.Warn(w.Kind, w.Message)
	}
	run.TargetRuntime = server.Runtime
	if server.Pprof == nil {
		o.Profile = nil
	}
	clients := make([]*Client, o.Concurrency)
	for i := range clients {
		clients[i] = newClient(t, o.Timeout, o.MaxBody, budget, seed, measuring, live, kept)
		if o.RequestTimes {
			clients[i].rec.timesCap = maxRequestTimes / o.Concurrency
		}
	}

	var sampler *target.Sampler
	if server.PID > 0 {
		sampler = target.StartSampler(server.PID, 500*time.Millisecond)
	}
	start := time.Now()
	measureFrom := start.Add(o.Warmup)
	end := measureFrom.Add(o.Duration)
	seconds := newPerSecond()
	for _, c := range clients {
		c.rec.second = newSecondTally(seconds, measureFrom, o.Duration)
	}
	if o.Profile != nil && o.Profile.Gap >= 0 && server.PID > 0 {
		// The CPU windows take turns with unprofiled gaps, so that the run
		// measures what its profiling cost the target.
		po, pid := *o.Profile, server.PID
		po.Reading = func() (time.Duration, int64, bool) {
			cpu, err := target.ProcessCPU(pid)
			return cpu, live.requests.Load() - live.errors.Load(), err == nil
		}
		o.Profile = &po
	}
	win := openMeasureWindow(ctx, o, sampler, t.Child, measuring)
	stopProgress := startProgress(o.Progress, start, o.Warmup, live)
	var wg sync.WaitGroup
	cl := &clientLoop{ctx: ctx, ml: ml, o: o, end: end, sched: openLoop{start: start}}
	if o.Rate > 0 {
		cl.sched.interval = time.Duration(float64(time.Second) / o.Rate)
	}
	loops := closedLoops(clients, o)
	client := cl.run
	for id, c := range clients {
		if l := c.loop(); l != nil {
			l.Go(func() { client(id, c) })
		} else {
			wg.Go(func() { client(id, c) })
		}
	}
	for _, l := range loops {
		wg.Go(l.Run)
	}
	// Close connections on cancellation so that blocked requests return.
	stopInterrupt := context.AfterFunc(ctx, func() {
		for _, l := range loops {
			l.Interrupt()
		}
		for _, c := range clients {
			c.conn.Interrupt()
		}
	})
	wg.Wait()
	stopInterrupt()
	stopped := time.Now()
	stopProgress()
	measuring.Store(false)
	spent, windowOpened := win.close(run)

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
	if errp := cl.sessionErr.Load(); errp != nil && run.Ended == "" {
		run.Ended = "session set-up failed: " + (*errp).Error()
		run.Warn("session-failed", "a client could not set up its session ("+(*errp).Error()+"); it sent nothing")
	}
	run.Start = measureFrom
	if windowOpened {
		if stopped.After(end) {
			stopped = end
		}
		run.Duration = stopped.Sub(measureFrom)
		run.GeneratorCPU = spent.Generator
		if run.CPUWindow > 0 {
			run.OthersCPU = max(0, spent.Others.Seconds()/run.CPUWindow.Seconds())
		}
		run.LogLines, run.LogBytes = win.cpu.Log()
	}
	if sampler != nil {
		// Without a window the process's CPU is all it used so far.
		if run.TargetProc = sampler.Stop(); run.TargetProc != nil && windowOpened {
			run.TargetProc.CPU, run.TargetProc.Children = spent.Target, spent.Children
		}
	}

	index := map[string]*result.OpStats{}
	keys := map[string]*keyReplies{}
	h2Opened, h2Dropped := t.h2Counts()
	run.ConnsOpened, run.ConnsDropped = h2Opened-h2Opened0, h2Dropped-h2Dropped0
	reasons := NewReasons(run.Errors)
	cut := 0
	for _, c := range clients {
		c.rec.mergeInto(run, index, keys, reasons)
		opened, dropped := c.conn.Counts()
		run.ConnsOpened += opened
		run.ConnsDropped += dropped
		cut += c.cut
		c.conn.Close()
	}
	if cut > 0 {
		run.Warn("stream-kept-open", fmt.Sprintf("%d replies' event streams stayed open after their result: each was timed to its "+
			"result and its connection closed %v later, so their clients sent less than they could", cut, h1.StreamGrace))
	}
	run.Digests = digestsOf(keys, kept)
	if windowOpened {
		run.Seconds = seconds.series(run.Duration)
	}
	judge(run, o, machine.CPUs())
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
func judge(run *result.Run, o LoadOptions, machineCPUs int) {
	if run.Duration <= 0 {
		return
	}
	span := run.CPUSpan().Seconds()
	genCores := run.GeneratorCPU.Seconds() / span
	if run.CPUs > 0 && genCores >= 0.85*float64(run.CPUs) {
		run.Warn("generator-bound", fmt.Sprintf("probe used %.2f of its %d CPUs: the load generator, not the target, may be the limit",
			genCores, run.CPUs))
	} else if tp := run.TargetProc; tp != nil && run.CPUs > 0 {
		targetCores := tp.CPU.Seconds() / span
		if genCores > targetCores && genCores+targetCores+run.OthersCPU > 0.85*float64(machineCPUs) {
			run.Warn("generator-bound", fmt.Sprintf("probe used %.2f cores and the target %.2f on a saturated machine: the "+
				"generator may be the limit", genCores, targetCores))
		}
	}
	if run.OthersCPU > machine.BusyCores {
		run.Warn("machine-busy", fmt.Sprintf("other processes used %.2f cores during the run: figures may be noisy", run.OthersCPU))
	}
	if o.Rate > 0 {
		calls, _ := run.Requests()
		want := o.Rate * run.Duration.Seconds()
		if want > 0 && float64(calls) < 0.95*want {
			run.Warn("rate-not-kept", fmt.Sprintf("sent %d of the %.0f requests the rate asked for: more clients or a faster "+
				"target are needed; latencies count the wait", calls, want))
		}
	}
	// Churn is the server's doing only when it closed the connections: after
	// an error probe closes its own, and that is no claim about the target.
	if run.Clients > 0 && run.ConnsDropped > run.Clients {
		run.Warn("connection-churn", fmt.Sprintf("%d connections opened for %d clients; the target closed kept-alive connections %d times", run.ConnsOpened, run.Clients, run.ConnsDropped))
	}
}

func startProgress(f func(Progress), start time.Time, warmup time.Duration, live *liveCounters) (stop func()) {
	if f == nil {
		return func() {}
	}
	var lastOK int64
	last := time.Now()
	return tick.Every(time.Second, func(now time.Time) {
		n, errs := live.requests.Load(), live.errors.Load()
		f(Progress{Elapsed: now.Sub(start), Warmup: now.Sub(start) < warmup, Requests: n, Errors: errs,
			RPS: float64(n-errs-lastOK) / now.Sub(last).Seconds()})
		lastOK, last = n-errs, now
	})
}

// closedLoops put the clients of a closed loop over HTTP/1.1 into event
// loops of their own (lib/h1's Loop, wrk's design), as many as the
// process has Ps (wrk's threads), the clients dealt among them: a reply
// then wakes no goroutine, and the generator's CPU a request is below
// wrk's (docs/BENCHMARKS.md). None: the clients are goroutines (the open
// loop, whose sends the runtime's timers time; HTTP/2, whose streams
// share connections; PROBE_LOOP=0; a system without epoll).
func closedLoops(clients []*Client, o LoadOptions) []*h1.Loop {
	if o.Rate > 0 || os.Getenv("PROBE_LOOP") == "0" {
		return nil
	}
	for _, c := range clients {
		if _, ok := c.conn.(*h1Transport); !ok {
			return nil
		}
	}
	loops := make([]*h1.Loop, min(h1.Procs(), len(clients)))
	for i := range loops {
		l, err := h1.NewLoop()
		if err != nil {
			for _, l := range loops[:i] {
				l.Run() // no clients: closes it
			}
			return nil
		}
		loops[i] = l
	}
	for i, c := range clients {
		c.conn.(*h1Transport).Loop = loops[i%len(loops)]
	}
	return loops
}

// measureWindow is the measured window of a run: opened after the
// warm-up (at once without one), it starts the CPU accounting, the
// profiles' capture and the work run beside the load (During).
type measureWindow struct {
	cpu        *target.CPUWindow
	opened     chan struct{}
	duringDone chan struct{}
	captured   chan *result.Profiles
	timer      *time.Timer // nil: opened at once
	profiled   bool
}

func openMeasureWindow(ctx context.Context, o LoadOptions, sampler *target.Sampler, child *target.Child,
	measuring *atomic.Bool) *measureWindow {
	w := &measureWindow{opened: make(chan struct{}), duringDone: make(chan struct{}),
		captured: make(chan *result.Profiles, 1), profiled: o.Profile != nil}
	open := func() {
		w.cpu = target.OpenCPUWindow(sampler, child)
		if o.Profile != nil {
			go func() { w.captured <- target.CaptureProfiles(ctx, *o.Profile, o.Duration) }()
		}
		if o.During != nil {
			duringCtx, stop := context.WithTimeout(ctx, o.Duration)
			go func() { o.During(duringCtx); stop(); close(w.duringDone) }()
		} else {
			close(w.duringDone)
		}
		measuring.Store(true)
		close(w.opened)
	}
	// Without a warmup the window opens before the first request is sent,
	// or a fast first reply would go unmeasured (a timer's goroutine may
	// run after it).
	if o.Warmup > 0 {
		w.timer = time.AfterFunc(o.Warmup, open)
	} else {
		open()
	}
	return w
}

// close ends the window when the last request has ended: the CPU it
// spent, and the profiles (their warnings on run); false when the run
// ended before the window opened.
func (w *measureWindow) close(run *result.Run) (target.WindowCPU, bool) {
	if w.timer != nil && w.timer.Stop() {
		return target.WindowCPU{}, false
	}
	// The CPU figures end now: waiting for the profiles first would
	// stretch them over time the load did not run.
	<-w.opened // the snapshots taken when the window opened are complete
	spent := w.cpu.Close()
	run.CPUWindow = spent.Span
	<-w.duringDone
	if w.profiled {
		run.Profiles = <-w.captured
		for _, warn := range run.Profiles.Warnings {
			run.Warn(warn.Kind, warn.Message)
		}
	}
	return spent, true
}

// clientLoop is what each client of a run does: its session's calls, one
// after another (closed loop) or each at its due time (open loop), until
// the window's end, the request budget or the run's end.
type clientLoop struct {
	ctx        context.Context
	ml         Microload
	o          LoadOptions
	end        time.Time
	sched      openLoop
	next       atomic.Int64 // open loop: index of the next intended send
	sent       atomic.Int64 // for Requests
	sessionErr atomic.Pointer[error]
}

// sleep waits d; false: the run is ending.
func (cl *clientLoop) sleep(c *Client, d time.Duration) bool {
	if l := c.loop(); l != nil {
		return l.Sleep(d)
	}
	select {
	case <-time.After(d):
		return true
	case <-cl.ctx.Done():
		return false
	}
}

// run is client id's loop on c.
func (cl *clientLoop) run(id int, c *Client) {
	sess, err := cl.ml.NewSession(cl.ctx, c, id)
	if err != nil {
		cl.sessionErr.CompareAndSwap(nil, &err)
		return
	}
	var backoff time.Duration
	for i := 0; ; i++ {
		if cl.ctx.Err() != nil {
			return
		}
		if cl.o.Requests > 0 && cl.sent.Add(1) > cl.o.Requests {
			return
		}
		var intended time.Time
		if cl.sched.interval > 0 {
			intended = cl.sched.due(cl.next.Add(1) - 1)
			if !intended.Before(cl.end) {
				return
			}
			if d := time.Until(intended); d > 0 && !cl.sleep(c, d) {
				return
			}
		}
		// The clock read that ends the run is the request's send time: one
		// read fewer a request.
		call := sess.Next(i)
		now := c.clock.now()
		if !now.Before(cl.end) {
			return
		}
		if _, err := c.doAt(call, intended, now, false); isDialError(err) {
			// A target that refuses connections is not hammered in a tight
			// loop: each client backs off, 10 ms doubling to 1 s.
			backoff = min(max(2*backoff, 10*time.Millisecond), time.Second)
			if !cl.sleep(c, min(backoff, time.Until(cl.end))) {
				return
			}
		} else {
			backoff = 0
		}
	}
}
