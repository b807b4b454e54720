// Package pipeline is what every measuring command of probe runs, the same
// steps the same way: load (with capture) → analyze → write. The command
// line (internal/cli) parses flags, opens the target and hands the parts
// here; the parts are fields of Options so that tests swap them, as
// pprof's driver takes its fetcher, UI and writer. Measure is one
// microload's run; Interleave an A/B of two versions; Ramp the arrival
// engine to the knee and what gave way; Scale the target at each size of
// its data, with the growth fits; AnalyzeProfiles the analyzers on
// profile files.
//
// Errors are plain: the library names the problem, the command adds the
// flag that answers it.
package pipeline

import (
	"context"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
)

// Rule is an analyzer rule (the catalog and --rules FILE's), named here so
// that the command layer need not import the analyzers.
type Rule = analyzers.Rule

// LoadFunc drives a microload against a target: probes.RunLoad.
type LoadFunc func(ctx context.Context, ml probes.Microload, t *probes.Target, o probes.LoadOptions) (*result.Run, error)

// WriteFunc writes a report into a folder: report.WriteFolder.
type WriteFunc func(dir string, doc report.Document) error

// UI shows a run while its load runs (the command's live stderr line).
type UI interface {
	// Progress is the load's figures so far; label names the run.
	Progress(label string, p probes.Progress)
	// Done ends the live display of a run.
	Done()
}

// Options are the pipeline's parts. A zero field takes its default.
type Options struct {
	Rules []Rule    // the analyzers' rules; nil: none beyond the built-in behaviour of Analyze
	Load  LoadFunc  // default probes.RunLoad
	Write WriteFunc // default report.WriteFolder
	UI    UI        // nil: nothing is shown
	// Warnings sees the load engine's warnings before they go into the
	// report: the command adds the flags that answer them.
	Warnings func([]result.Warning)
	// Experiment is the time the confirming experiment of thin findings
	// may take after each profiled run (experiment.go); 0: none.
	Experiment time.Duration
}

// Pipeline runs load → analyze → write with its parts.
type Pipeline struct {
	o Options
}

// New is a pipeline of the parts in o, defaults for those not given.
func New(o Options) *Pipeline {
	if o.Load == nil {
		o.Load = probes.RunLoad
	}
	if o.Write == nil {
		o.Write = report.WriteFolder
	}
	return &Pipeline{o: o}
}

// Measure loads ml against t and analyses what it saw: one microload's
// report, and the run it was made from. label names the run on the UI.
func (p *Pipeline) Measure(ctx context.Context, label string, ml probes.Microload, t *probes.Target,
	o probes.LoadOptions) (*report.Run, *result.Run, error) {
	if p.o.UI != nil {
		o.Progress = func(pr probes.Progress) { p.o.UI.Progress(label, pr) }
	}
	run, err := p.o.Load(ctx, ml, t, o)
	if p.o.UI != nil {
		p.o.UI.Done()
	}
	if err != nil {
		return nil, nil, err
	}
	if p.o.Warnings != nil {
		p.o.Warnings(run.Warnings)
	}
	a := AnalyzeRunContext(analysisContext(ctx), run, p.o.Rules)
	if p.o.Experiment > 0 {
		a = p.experiment(ctx, ml, t, o, run, a)
	}
	return report.FromRun(run, a), run, nil
}

// Write is the write step: doc's report folder at dir.
func (p *Pipeline) Write(dir string, doc report.Document) error {
	return p.o.Write(dir, doc)
}
