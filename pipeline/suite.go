package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
)

// Suite is microloads measured one after another on one target: probe
// all's loop, and a microload command's (a suite of one). Before each
// microload but the first it waits for a quiet target; it chooses the
// clients when asked, runs writes beside the reads, and says what
// profiling cost. A microload that cannot be measured is skipped, with
// why (KeepGoing), or ends the suite with its error.
type Suite struct {
	Target  *probes.Target
	Options probes.LoadOptions
	Settle  time.Duration // the longest wait for a quiet target (0: none)
	// AutoClients: --concurrency auto, a short ramp before each run.
	// ChooseWhenSlow: the ramp unasked for a microload whose first reply,
	// sent alone, takes over a second (32 clients of a 3 CPU-s sitemap
	// time out).
	AutoClients, ChooseWhenSlow bool
	KeepGoing                   bool // probe all: skip what fails, say so
	Overhead                    bool // --profiling-overhead
	// Prepare is the microload as its run sends it (a shard's part),
	// before its clients are chosen; nil: as it is.
	Prepare func(probes.Microload) probes.Microload
	// Writes starts the writes beside a microload's reads (nil: none).
	Writes func(context.Context) *probes.WriteLoad
	// Finish adds to a run's report what the caller knows of it (a
	// shard's part, a stream's figures); its error skips the microload.
	Finish func(*report.Run, *result.Run, probes.Microload, probes.LoadOptions) error
	// Explain words a microload's error for the user (a flag to point
	// it at what was not found); nil: as it is.
	Explain   func(name string, err error) error
	MaxReason int               // the longest skip reason kept, in bytes (0: textline.Max)
	Warnings  []result.Warning  // the target's, on every report
	Rules     []Rule            // the writes' report judges by them
	Say       func(line string) // progress, a line at a time
}

// SuiteResult is what a Suite measured and what it skipped.
type SuiteResult struct {
	Reports []*report.Run
	Skipped []report.Skipped
	// Warnings are the skipped microloads' waits that did not end quiet.
	Warnings []result.Warning
}

// Run measures s's microloads with p, in order.
func (s *Suite) Run(ctx context.Context, p *Pipeline, loads []probes.Microload) (SuiteResult, error) {
	var out SuiteResult
	var settler *Settler
	if len(loads) > 1 && s.Settle > 0 {
		settler = NewSettler(s.Target, s.Settle)
		settler.Baseline(ctx)
	}
	for i, ml := range loads {
		if ctx.Err() != nil {
			break
		}
		var settle *report.Settle
		if settler != nil && i > 0 {
			if settle = s.settle(ctx, settler, ml); ctx.Err() != nil {
				break
			}
		}
		rep, run, err := s.measure(ctx, p, ml, settle)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if s.Explain != nil {
				err = s.Explain(ml.Name(), err)
			}
			if why := BusyReason(settle); why != "" {
				err = fmt.Errorf("%w; %s", err, why)
			}
			if !s.KeepGoing {
				return out, fmt.Errorf("target %s: %v", s.Target.URL, err)
			}
			why := textline.Of(err.Error(), cmp.Or(s.MaxReason, textline.Max))
			s.say(fmt.Sprintf("skipping %s: %s", ml.Name(), why))
			out.Skipped = append(out.Skipped, report.Skipped{Microload: ml.Name(), Reason: why})
			if w, ok := SettleWarning(settle); ok {
				out.Warnings = append(out.Warnings, result.Warning{Kind: w.Kind, Message: ml.Name() + ": " + w.Message})
			}
			continue
		}
		out.Reports = append(out.Reports, rep)
		if run.Ended != "" && !errors.Is(ctx.Err(), context.Canceled) {
			break // the target died: the next microload has nothing to load
		}
	}
	return out, nil
}

// settle waits for a quiet target before ml, saying so when it waited.
func (s *Suite) settle(ctx context.Context, settler *Settler, ml probes.Microload) *report.Settle {
	settler.Busy = func() {
		s.say(fmt.Sprintf("the target is busy: waiting (up to --settle %s) for it to be quiet before %s…", s.Settle, ml.Name()))
	}
	settle := settler.Wait(ctx)
	if ctx.Err() == nil && (settle.WaitedS >= 1 || !settle.Quiet) {
		s.say(fmt.Sprintf("%s after %.0f s", quietWord(settle), settle.WaitedS))
	}
	return settle
}

// measure is one microload's run and its report.
func (s *Suite) measure(ctx context.Context, p *Pipeline, ml probes.Microload,
	settle *report.Settle) (*report.Run, *result.Run, error) {
	o := s.Options
	sent := ml
	if s.Prepare != nil {
		sent = s.Prepare(ml)
	}
	chose, err := s.chooseClients(ctx, p, ml)
	if err != nil {
		return nil, nil, err
	}
	if chose != nil {
		o.Concurrency = chose.Chosen
	}
	var wl *probes.WriteLoad
	if s.Writes != nil {
		wl = s.Writes(ctx)
		o = WithWrites(o, wl)
		defer wl.Cleanup(context.WithoutCancel(ctx))
	}
	rep, run, err := p.Measure(ctx, ml.Name(), sent, s.Target, o)
	if err == nil && s.Overhead && o.Profile != nil && ctx.Err() == nil {
		leg := max(2*time.Second, min(5*time.Second, o.Duration/2))
		s.say(fmt.Sprintf("what profiling costs %s: 2 rounds of %v without and with…", ml.Name(), leg))
		rep.ProfilingOverhead, err = p.ProfilingOverhead(ctx, ml, s.Target, o, leg, 2)
	}
	if err != nil {
		return nil, nil, err
	}
	if wl != nil {
		rep.Writes = WritesReport(run, wl, s.Rules)
	}
	for _, w := range s.Warnings {
		rep.Warn(w.Kind, w.Message)
	}
	rep.Settle, rep.AutoClients = settle, chose
	if s.Finish != nil {
		if err := s.Finish(rep, run, ml, o); err != nil {
			return nil, nil, err
		}
	}
	if w, ok := SettleWarning(settle); ok {
		rep.Warn(w.Kind, w.Message)
	}
	return rep, run, nil
}

// chooseClients runs the ramp that chooses ml's clients (nil: the
// options' clients stand).
func (s *Suite) chooseClients(ctx context.Context, p *Pipeline, ml probes.Microload) (*report.Concurrency, error) {
	forced := ""
	if !s.AutoClients {
		if !s.ChooseWhenSlow {
			return nil, nil
		}
		slow, took, err := p.FirstReplySlow(ctx, ml, s.Target, s.Options)
		if err != nil || !slow {
			return nil, err
		}
		forced = fmt.Sprintf("its first reply took %v (over 1 s)", took.Round(time.Millisecond))
		s.say(fmt.Sprintf("%s: %s: choosing the clients (--concurrency auto)…", ml.Name(), forced))
	} else {
		s.say(fmt.Sprintf("%s: --concurrency auto: a short ramp finds the clients…", ml.Name()))
	}
	chose, err := p.AutoConcurrency(ctx, ml, s.Target, s.Options)
	if err != nil {
		return nil, fmt.Errorf("--concurrency auto: %w", err)
	}
	chose.Forced = forced
	s.say(fmt.Sprintf("%s: %d clients: %s", ml.Name(), chose.Chosen, chose.Why))
	return chose, nil
}

func (s *Suite) say(line string) {
	if s.Say != nil {
		s.Say(line)
	}
}

// quietWord says how a wait for a quiet target ended.
func quietWord(st *report.Settle) string {
	switch {
	case st.Quiet:
		return "the target was quiet"
	case st.JudgedBy == "none":
		return "quiet could not be judged (" + st.Note + ")"
	}
	return "the target was still busy; going on (a target-busy warning)"
}

// WithWrites is o with the writes of wl beside its reads: each request's
// time kept (the reads during writes), a profile window a second, back to back.
func WithWrites(o probes.LoadOptions, wl *probes.WriteLoad) probes.LoadOptions {
	o.RequestTimes = true
	o.During = wl.Run
	if o.Profile != nil {
		p := *o.Profile
		p.Window, p.Gap = time.Second, -1 // every second profiled: a sync in a gap would go unseen
		o.Profile = &p
	}
	return o
}
