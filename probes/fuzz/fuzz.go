// Package fuzz finds the inputs that kill a Go server: it fills request
// templates with boundary values and grammar-built Jsonnet, sends them from
// several clients to a target process it supervises, classifies each death,
// restarts the target and goes on; afterwards it confirms each crash alone
// and shrinks it to the smallest input that still crashes the same way.
package fuzz

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probehq/probe/lib/tick"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// Options configure a fuzz run. Start is the one part that knows the
// target: it starts a fresh process (stderr copied to the writer given) and
// is called again after every death.
type Options struct {
	Templates   []*Template
	Header      http.Header // sent with every request
	Start       func(ctx context.Context, stderr io.Writer) (*target.Child, error)
	Corpus      []Seed // Jsonnet seeds added to JsonnetCorpus
	Concurrency int
	Duration    time.Duration // the search; shrinking comes after
	Timeout     time.Duration // a request outliving it on a live target is a hang
	ShrinkTime  time.Duration // for confirming and shrinking all crashes together
	Seed        uint64
	StopAfter   int // > 0: the search ends once it has found this many distinct crashes
	// Inputs > 0 ends the search after that many inputs tried (a burst's
	// copies each count; the extremes come first, in order), or at
	// Duration if that is sooner: what a short search covers is then the
	// same on a busy machine as on a quiet one.
	Inputs   int64
	Progress func(Progress) // about once a second
	// Open, when set, readies each fresh process before its first input
	// (an MCP session: a restart loses the last one) and returns the
	// header every request to that process carries.
	Open func(ctx context.Context, child *target.Child) (http.Header, error)
	// Refused, when set, reads a whole reply under 400 and returns why it
	// refuses the input ("": it does not); a JSON-RPC error answers 200.
	// A refusal is counted apart, never a crash.
	Refused func(status int, header http.Header, body []byte) string
	// Vary, when set, makes each body sent its own (a JSON-RPC id: a
	// session refuses a request whose id another in flight holds); n
	// counts the requests. Reports show the body as the template renders it.
	Vary func(body []byte, n uint64) []byte
	// Whole, when set, is a reply's watch (nil: none for this reply):
	// told each part of the body as it comes, each byte once, it says when
	// the body so far is whole before its stream ends (an MCP event stream
	// holding its result, which a server may keep open after it): the
	// rest is not waited for, and is no hang.
	Whole func(header http.Header) func(more []byte) bool

	randomOnly bool // tests: no extremes first, to measure what they add
}

// Progress is the live state, for the progress line.
type Progress struct {
	Phase    string // "search" or "shrink"
	Elapsed  time.Duration
	Inputs   int64
	Crashes  int // distinct so far
	Restarts int
}

// Outcome is what one input did to the target.
type Outcome struct {
	Class    string // a crash class; empty when the target answered and lived
	Evidence string
	Frames   []string
	Stderr   string // the start of the crash dump or the recovered panic's trace
	Status   int    // HTTP status, when it answered
	Reason   string // first line of an error reply, or the transport error
	Refused  bool   // a whole reply under 400 that refuses the input (Options.Refused)
}

// fuzzer is one run: the options, the supervised target and what the
// search has seen so far, each under its own lock.
type fuzzer struct {
	o     Options
	start time.Time
	sup   *supervisor
	seen  *tally
	// extremes are tried first, in order, by whichever client is free.
	extremes    []result.FuzzInput
	nextExtreme atomic.Int64
	taken       atomic.Int64 // inputs the search has taken, for Options.Inputs
	recent      recent       // the search's last inputs, the leak hunt's candidates
	sent        atomic.Uint64
}

// Run fuzzes until o.Duration has passed or ctx ends, then confirms and
// shrinks what it found for up to o.ShrinkTime. A ctx that ends keeps what
// was found so far.
func Run(ctx context.Context, o Options) (*result.Fuzz, error) {
	if len(o.Templates) == 0 {
		return nil, errors.New("no request template to fuzz")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	f := &fuzzer{o: o, start: time.Now(), sup: newSupervisor(o.Start, o.Open), seen: newTally(len(o.Templates))}
	if !o.randomOnly {
		f.extremes = extremeInputs(o.Templates)
	}
	res := &result.Fuzz{Start: f.start}
	for _, t := range o.Templates {
		res.Templates = append(res.Templates, t)
	}
	// The first start is a check of the command: its error is the run's.
	child, _, _, err := f.sup.ensure(ctx)
	if err != nil {
		return nil, err
	}
	res.Target = child.URL
	if err := answers(ctx, child, o.Timeout); err != nil {
		child.Kill()
		return nil, err
	}

	stopProgress := f.progress("search")
	searchCtx, cancel := context.WithTimeout(ctx, o.Duration)
	var wg sync.WaitGroup
	for i := range o.Concurrency {
		wg.Go(func() { f.searchClient(searchCtx, cancel, rand.New(rand.NewPCG(o.Seed, uint64(i)+1))) })
	}
	wg.Wait()
	cancel()
	stopProgress()
	res.Search = time.Since(f.start)
	startErr := f.sup.failedStart()
	if ctx.Err() != nil {
		res.Ended = "interrupted during the search"
	} else if startErr != nil {
		res.Ended = "the target would not start again: " + startErr.Error()
	}

	shrinkStart := time.Now()
	var leakedAtEnd int64
	if ctx.Err() == nil && startErr == nil {
		leakedAtEnd = f.leakedNow(ctx)
		stopProgress = f.progress("shrink")
		res.Crashes = f.confirmAndShrink(ctx)
		stopProgress()
		if ctx.Err() != nil {
			res.Ended = "interrupted while shrinking"
		}
	}
	if res.Crashes == nil {
		res.Crashes = f.unshrunk()
	}
	if ctx.Err() == nil && startErr == nil {
		var leaks []*result.FuzzCrash
		leaks, res.LeakHunt = f.huntLeaks(ctx, time.Now().Add(leakHuntTime), leakedAtEnd)
		for _, c := range leaks {
			res.Crashes = mergeCrash(res.Crashes, c)
		}
	}
	res.Shrinking = time.Since(shrinkStart)
	f.sup.stop()
	res.Restarts = f.sup.restartCount()
	res.Inputs, res.Hostile, res.Unsent = f.seen.inputs.Load(), f.seen.hostile.Load(), f.seen.unsent.Load()
	res.Refused = f.seen.refused.Load()
	res.Extremes = int(min(f.nextExtreme.Load(), int64(len(f.extremes))))
	res.Statuses, res.Failures = f.seen.statuses, f.seen.failures.M
	return res, nil
}

func (f *fuzzer) progress(phase string) (stop func()) {
	if f.o.Progress == nil {
		return func() {}
	}
	return tick.Every(time.Second, func(time.Time) {
		f.o.Progress(Progress{Phase: phase, Elapsed: time.Since(f.start), Inputs: f.seen.inputs.Load(), Crashes: f.seen.distinct(),
			Restarts: f.sup.restartCount()})
	})
}

// request is an input as the request it is.
func (f *fuzzer) request(in result.FuzzInput) result.FuzzRequest {
	return f.o.Templates[in.Template].Request(in.Values)
}

// plainValue is what a hole holds while another hole's value is tried or
// shrunk: an ordinary value of its kind.
func plainValue(t *Template, h hole) string {
	switch h.kind {
	case Str:
		return "a"
	case JSON:
		return "null"
	case Method:
		if t.Body != "" {
			return "POST"
		}
		return "GET"
	}
	return "1"
}

func plainInput(ti int, t *Template) result.FuzzInput {
	in := result.FuzzInput{Template: ti, Values: make([]string, len(t.holes))}
	for i, h := range t.holes {
		in.Values[i] = plainValue(t, h)
	}
	return in
}

// extremeInputs are the inputs the search tries first: each hole's
// extremes, the other holes plain, the first extreme of every hole of
// every template, then the second, and so on, so that a short budget still
// covers every hole's first extremes.
func extremeInputs(ts []*Template) []result.FuzzInput {
	var out []result.FuzzInput
	for j := 0; ; j++ {
		added := false
		for ti, t := range ts {
			for i, h := range t.holes {
				if j >= len(h.extremes) {
					continue
				}
				in := plainInput(ti, t)
				in.Values[i] = h.extremes[j]
				out, added = append(out, in), true
			}
		}
		if !added {
			return out
		}
	}
}

// extreme hands out the next extreme input, until there are none left.
func (f *fuzzer) extreme() (result.FuzzInput, bool) {
	i := f.nextExtreme.Add(1) - 1
	if i >= int64(len(f.extremes)) {
		return result.FuzzInput{}, false
	}
	return f.extremes[i], true
}
