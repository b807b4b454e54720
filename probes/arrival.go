package probes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/tick"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// Flow is one entry of a mix: a scenario, or a microload (one of its calls
// a session), with its weight.
type Flow struct {
	Name      string
	Weight    float64
	Scenario  *Scenario
	Microload Microload
}

// Steps names the flow's steps, for the per-step figures.
func (f Flow) Steps() []string {
	if f.Scenario == nil {
		return []string{f.Name}
	}
	out := make([]string, len(f.Scenario.Steps))
	for i, s := range f.Scenario.Steps {
		out[i] = f.Name + "/" + s.Name
	}
	return out
}

// ArrivalLoad starts sessions of a mix on a schedule (Rates), whether the
// earlier ones have finished or not, and measures each window of the
// schedule: offered and achieved rate, session and step latencies from the
// scheduled start, errors, sessions in flight, and the target process.
type ArrivalLoad struct {
	Target      *Target
	Mix         []Flow
	Rates       result.Rates
	Timeout     time.Duration // one request (default 30s)
	MaxBody     int
	ReplyMemory int64 // what all sessions' connections may hold for replies at once beyond 1 MiB each (default h1.DefaultBudget)
	MaxInFlight int   // sessions at once; an arrival past it is dropped, and counts as failed (default 10,000)
	PID         int   // the target's process, sampled at each window's end; 0: none
	// Stop, called as each window ends with the windows so far (the last
	// one's sessions may still be running), ends the run when it returns a
	// reason: the system is clearly past the knee.
	Stop func(done []result.WindowStats) string
	// Progress, when set, is called about once a second.
	Progress func(Progress)
	// Profile, when set, takes a CPU profile of each window and the mutex
	// and block profiles of the whole run.
	Profile *target.ProfileOptions
}

// Run drives the schedule against the target. It ends early, keeping what
// it measured, on ctx's end, on Stop, or when the target's process exits.
func (l *ArrivalLoad) Run(ctx context.Context) (*result.ArrivalRun, error) {
	if len(l.Mix) == 0 {
		return nil, errors.New("nothing to run")
	}
	if l.Timeout <= 0 {
		l.Timeout = 30 * time.Second
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = 10_000
	}
	var total float64
	for _, f := range l.Mix {
		if f.Scenario != nil {
			if err := f.Scenario.Validate(); err != nil {
				return nil, err
			}
			if err := f.Scenario.Prepare(ctx, l.Target); err != nil {
				return nil, err
			}
		}
		total += f.Weight
	}
	if !(total > 0) {
		return nil, errors.New("the mix's weights add up to nothing")
	}
	for _, f := range l.Mix {
		if f.Microload != nil {
			if err := Prepare(ctx, f.Microload, l.Target, l.Timeout); err != nil {
				return nil, fmt.Errorf("%s: %v", f.Name, err)
			}
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if t := l.Target.Child; t != nil {
		go func() {
			select {
			case <-t.Exited():
				cancel(fmt.Errorf("%w: %s", ErrTargetExited, t.ExitReason()))
			case <-ctx.Done():
			}
		}()
	}
	e := newArrivalEngine(l)
	run := &result.ArrivalRun{Start: time.Now(), Raw: map[string][]byte{}}
	e.start = run.Start
	stopSampling := e.sample()
	var profiles sync.WaitGroup
	if l.Profile != nil {
		profiles.Go(func() {
			target.ProfileWindows(ctx, *l.Profile, e.start, e.windows, run, func(i int, cpu, wall *profile.Profile) {
				e.mu.Lock()
				defer e.mu.Unlock()
				if cpu != nil {
					e.stats[i].CPU = cpu
				}
				if wall != nil {
					e.stats[i].Wall = wall
				}
			})
		})
	}
	stopProgress := func() {}
	if l.Progress != nil {
		var lastN int64
		last := time.Now()
		stopProgress = tick.Every(time.Second, func(now time.Time) {
			n := e.done.Load()
			l.Progress(Progress{Elapsed: now.Sub(e.start), Requests: e.started.Load(), Errors: e.failed.Load(),
				RPS: float64(n-lastN) / now.Sub(last).Seconds()})
			lastN, last = n, now
		})
	}
	ended := e.schedule(ctx)
	stopProgress()
	// The last sessions finish (each request has its timeout), or the
	// run's end cuts them short.
	waited := make(chan struct{})
	go func() { e.sessions.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		e.sessions.Wait()
	}
	stopSampling()
	cancel(nil)
	profiles.Wait()
	if ended == "" && context.Cause(ctx) != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
		ended = context.Cause(ctx).Error()
	}
	run.Ended = ended
	run.Windows = e.windowStats()
	for len(run.Windows) > 0 && run.Windows[len(run.Windows)-1].Started+run.Windows[len(run.Windows)-1].Dropped == 0 {
		run.Windows = run.Windows[:len(run.Windows)-1] // not reached: the run stopped before
	}
	run.InFlight = e.inflight
	run.Opened = int(e.opened.Load())
	return run, nil
}

// arrivalEngine is one run's state.
type arrivalEngine struct {
	l       *ArrivalLoad
	start   time.Time
	windows []result.Window
	cum     []float64 // cumulative weights of the mix

	started, done, failed, running atomic.Int64
	opened                         atomic.Int64
	sessions                       sync.WaitGroup

	pool chan *Client // idle clients, each one kept-alive connection
	// reasons tally each window's Errors: folded, bounded (MaxReasons).
	reasons []*Reasons
	budget  *h1.Budget // the reply memory all the clients share
	live    liveCounters
	seed    maphash.Seed

	mu           sync.Mutex
	stats        []result.WindowStats
	inflight     []result.InFlightSample
	procs        []target.Sample // at each window's start, and the last at the end
	procAt       []time.Time
	flowSessions map[*Client]map[int]Session // a client's session of each microload flow
}

func newArrivalEngine(l *ArrivalLoad) *arrivalEngine {
	e := &arrivalEngine{l: l, windows: l.Rates.Windows(), pool: make(chan *Client, l.MaxInFlight), seed: maphash.MakeSeed(),
		flowSessions: map[*Client]map[int]Session{}, budget: h1.NewBudget(cmp.Or(l.ReplyMemory, h1.DefaultBudget))}
	var c float64
	for _, f := range l.Mix {
		c += f.Weight
		e.cum = append(e.cum, c)
	}
	e.stats = make([]result.WindowStats, len(e.windows))
	e.reasons = make([]*Reasons, len(e.windows))
	for i, w := range e.windows {
		st := &e.stats[i]
		e.reasons[i] = NewReasons(nil)
		st.Window, st.Latency, st.Steps, st.Errors = w, result.NewHistogram(), map[string]*hdrhistogram.Histogram{}, e.reasons[i].M
		for _, f := range l.Mix {
			for _, s := range f.Steps() {
				st.Steps[s] = result.NewHistogram()
			}
		}
	}
	return e
}

// windowAt is the index of the window holding t, clamped.
func (e *arrivalEngine) windowAt(t time.Duration) int {
	for i, w := range e.windows {
		if t < w.To {
			return i
		}
	}
	return len(e.windows) - 1
}

// flowOf picks the flow of session n: a low-discrepancy sequence over the
// weights, so that every window gets the mix in its proportions.
func (e *arrivalEngine) flowOf(n int) int {
	x := math.Mod(float64(n)*0.6180339887498949, 1) * e.cum[len(e.cum)-1]
	for i, c := range e.cum {
		if x < c {
			return i
		}
	}
	return len(e.cum) - 1
}

// schedule starts the sessions on time until the schedule ends, ctx ends
// or Stop says so; it returns why it stopped early.
func (e *arrivalEngine) schedule(ctx context.Context) string {
	end := e.l.Rates.Duration()
	next := 0 // the next window to close
	timer := time.NewTimer(0)
	defer timer.Stop()
	for n, t := 0, time.Duration(0); ; n++ {
		// Close the windows that ended before this arrival.
		for next < len(e.windows) && (t >= e.windows[next].To || t >= end) {
			if reason := e.closeWindow(ctx, next); reason != "" {
				return reason
			}
			next++
		}
		if t >= end {
			return ""
		}
		timer.Reset(time.Until(e.start.Add(t)))
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), context.Canceled) {
				return "interrupted"
			}
			return context.Cause(ctx).Error()
		case <-timer.C:
		}
		e.arrive(ctx, n, t)
		t += time.Duration(float64(time.Second) / e.l.Rates.At(t))
	}
}

// closeWindow waits for the window's end, takes the target's figures and
// asks Stop.
func (e *arrivalEngine) closeWindow(ctx context.Context, i int) string {
	select {
	case <-ctx.Done():
		return ""
	case <-time.After(time.Until(e.start.Add(e.windows[i].To))):
	}
	e.sampleProc()
	if e.l.Stop == nil {
		return ""
	}
	return e.l.Stop(e.windowStats()[:i+1])
}

// arrive starts session n, due at t, on an idle client or a new one.
func (e *arrivalEngine) arrive(ctx context.Context, n int, t time.Duration) {
	w := e.windowAt(t)
	if e.running.Load() >= int64(e.l.MaxInFlight) {
		e.mu.Lock()
		e.stats[w].Dropped++
		// probe's own words: not folded
		e.reasons[w].add("", fmt.Sprintf("not started: %d sessions in flight (--max-in-flight)", e.l.MaxInFlight), 1)
		e.mu.Unlock()
		e.failed.Add(1)
		return
	}
	e.running.Add(1)
	e.started.Add(1)
	e.mu.Lock()
	e.stats[w].Started++
	e.mu.Unlock()
	due := e.start.Add(t)
	e.sessions.Go(func() {
		defer e.running.Add(-1)
		c := e.client()
		f := e.flowOf(n)
		err := e.runSession(ctx, c, f, n, w)
		ended := time.Now()
		e.done.Add(1)
		e.mu.Lock()
		defer e.mu.Unlock()
		st := &e.stats[w]
		if err != nil {
			if ctx.Err() != nil {
				return // the run's end cut it short: no verdict
			}
			st.Failed++
			e.reasons[w].Add("", err.Error(), 1)
			e.failed.Add(1)
		} else {
			st.Latency.RecordValue(max(1, ended.Sub(due).Microseconds()))
			e.stats[e.windowAt(ended.Sub(e.start))].Completed++
		}
		e.pool <- c // a connection that failed has closed itself, and dials again
	})
}

// client is an idle client, or a new one: one connection a user.
func (e *arrivalEngine) client() *Client {
	select {
	case c := <-e.pool:
		return c
	default:
	}
	e.opened.Add(1)
	measuring := &atomic.Bool{}
	return newClient(e.l.Target, e.l.Timeout, e.l.MaxBody, e.budget, e.seed, measuring, &e.live, newSamples())
}

// runSession runs flow f's session n on c, recording its steps in window w.
func (e *arrivalEngine) runSession(ctx context.Context, c *Client, f, n, w int) error {
	flow := e.l.Mix[f]
	steps := flow.Steps()
	record := func(s StepTime) {
		if s.Err != nil {
			return
		}
		e.mu.Lock()
		e.stats[w].Steps[steps[s.Step]].RecordValue(max(1, s.Latency.Microseconds()))
		e.mu.Unlock()
	}
	if flow.Scenario != nil {
		return flow.Scenario.runSession(ctx, c, n, record)
	}
	e.mu.Lock()
	sess := e.flowSessions[c][f]
	e.mu.Unlock()
	if sess == nil {
		var err error
		if sess, err = flow.Microload.NewSession(ctx, c, int(e.opened.Load())); err != nil {
			return fmt.Errorf("%s: session set-up: %v", flow.Name, err)
		}
		e.mu.Lock()
		if e.flowSessions[c] == nil {
			e.flowSessions[c] = map[int]Session{}
		}
		e.flowSessions[c][f] = sess
		e.mu.Unlock()
	}
	call := sess.Next(n)
	sent := time.Now()
	_, err := c.do(call, time.Time{}, false)
	record(StepTime{Latency: time.Since(sent), Err: err})
	if err != nil {
		return fmt.Errorf("%s: %v", call.Op, err)
	}
	return nil
}
