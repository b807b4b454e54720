package pipeline

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
)

// MeasureFunc runs clients closed-loop clients for about d: what they
// got through per second, their median service time, and how many
// requests outlived the timeout.
type MeasureFunc func(ctx context.Context, clients int, d time.Duration) (throughput float64, p50 time.Duration, timeouts int64, err error)

// The search's bounds. A step grows by 10 % or more to count as growth;
// each window is 3 × the median seen, at least 1 s and at most 5 s, so
// that a slow endpoint still gets a few replies per client.
const (
	autoMaxClients = 256
	autoGrowth     = 1.10
	autoMinWindow  = time.Second
	autoMaxWindow  = 5 * time.Second
)

// AutoClientsCap is the most clients the search tries on this machine:
// 256, or 64 per CPU when there are fewer than 4.
func AutoClientsCap() int { return min(autoMaxClients, 64*runtime.NumCPU()) }

// ChooseConcurrency is the ramp of --concurrency auto: 1, 2, 4, 8, …
// clients (at most limit), each a short window, until throughput grows
// less than 10 % over the step before, requests time out, or the median
// passes timeout/4. The choice is the knee: the last step that grew (at
// least 1). A step that fails ends the search with its error.
func ChooseConcurrency(ctx context.Context, measure MeasureFunc, timeout time.Duration, limit int) (*report.Concurrency, error) {
	if limit < 1 {
		limit = 1
	}
	c := &report.Concurrency{Chosen: 1}
	window := autoMinWindow
	for clients := 1; ; clients *= 2 {
		clients = min(clients, limit)
		rps, p50, timeouts, err := measure(ctx, clients, window)
		if err != nil {
			return nil, err
		}
		c.Steps = append(c.Steps, report.ConcurrencyStep{Clients: clients, RPS: math.Round(rps*100) / 100,
			P50ms: math.Round(float64(p50)/float64(time.Microsecond)) / 1000, Timeouts: timeouts})
		prev := c.Chosen
		switch {
		case timeouts > 0:
			c.Why = fmt.Sprintf("%d requests timed out at %d clients", timeouts, clients)
		case timeout > 0 && p50 > timeout/4:
			c.Why = fmt.Sprintf("the median reply took %v at %d clients, past a quarter of the %v timeout", p50.Round(time.Millisecond),
				clients, timeout)
		case len(c.Steps) > 1 && rps < c.Steps[len(c.Steps)-2].RPS*autoGrowth:
			c.Why = fmt.Sprintf("throughput grew less than 10%% from %d to %d clients (%.4g → %.4g rps)", prev, clients,
				c.Steps[len(c.Steps)-2].RPS, rps)
		case rps <= 0:
			c.Why = fmt.Sprintf("no reply passed its checks at %d clients", clients)
		case clients >= limit:
			c.Chosen = clients
			c.Why = fmt.Sprintf("throughput still grew at %d clients, the most the search tries here", clients)
		default:
			c.Chosen = clients
			window = min(max(autoMinWindow, 3*p50), autoMaxWindow)
			continue
		}
		return c, nil
	}
}

// runMeasure is a MeasureFunc of the pipeline's load engine: ml at the
// step's clients, no warm-up, no profiling, no writes.
func (p *Pipeline) runMeasure(ml probes.Microload, t *probes.Target, o probes.LoadOptions) MeasureFunc {
	return func(ctx context.Context, clients int, d time.Duration) (float64, time.Duration, int64, error) {
		so := probes.LoadOptions{Concurrency: clients, Duration: d, Timeout: o.Timeout, MaxBody: o.MaxBody, ReplyMemory: o.ReplyMemory}
		run, err := p.o.Load(ctx, ml, t, so)
		if err != nil {
			return 0, 0, 0, err
		}
		if run.Ended != "" {
			return 0, 0, 0, fmt.Errorf("the run ended early at %d clients: %s", clients, run.Ended)
		}
		return runFigures(run)
	}
}

// runFigures are a step's figures: replies that passed their checks per
// second, the median latency, the timeouts.
func runFigures(run *result.Run) (float64, time.Duration, int64, error) {
	calls, errs := run.Requests()
	var timeouts int64
	for _, op := range run.Ops {
		if !op.Setup && op.Timeouts != nil {
			timeouts += op.Timeouts.TotalCount()
		}
	}
	timeouts = max(timeouts, run.Errors["timeout"])
	// Per second of the window until the last reply: the replies still
	// queued when sending stops count, and so does the time they take
	// (over Duration alone, 8 clients of a 4-worker server seemed 10 %
	// faster than 4).
	rps := 0.0
	if span := run.CPUSpan(); span > 0 {
		rps = float64(calls-errs) / span.Seconds()
	}
	var p50 time.Duration
	if h := run.Latency(); h != nil && h.TotalCount() > 0 {
		p50 = time.Duration(h.ValueAtQuantile(50)) * time.Microsecond
	}
	return rps, p50, timeouts, nil
}

// AutoConcurrency runs the ramp of --concurrency auto on the pipeline's
// load engine and returns its choice.
func (p *Pipeline) AutoConcurrency(ctx context.Context, ml probes.Microload, t *probes.Target,
	o probes.LoadOptions) (*report.Concurrency, error) {
	return ChooseConcurrency(ctx, p.runMeasure(ml, t, o), o.Timeout, AutoClientsCap())
}

// FirstReplySlow sends ml's first request alone (one client, one request,
// its reply waited for up to the timeout) and tells whether it took over
// a second: probe all then chooses its clients with --concurrency auto.
// A fast endpoint costs one request.
func (p *Pipeline) FirstReplySlow(ctx context.Context, ml probes.Microload, t *probes.Target, o probes.LoadOptions) (bool,
	time.Duration, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second // RunLoad's default
	}
	// The window outlasts the one request: it ends the run, not the clock.
	so := probes.LoadOptions{Concurrency: 1, Requests: 1, Duration: timeout + time.Second, Timeout: timeout,
		MaxBody: o.MaxBody, ReplyMemory: o.ReplyMemory}
	run, err := p.o.Load(ctx, ml, t, so)
	if err != nil {
		return false, 0, err
	}
	_, p50, timeouts, _ := runFigures(run)
	return timeouts > 0 || p50 > time.Second, p50, nil
}
