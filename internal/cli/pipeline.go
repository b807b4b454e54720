package cli

import (
	"context"

	// Imported as pipe while scale.go still names the pipeline by its old
	// type (pipeline, below).
	pipe "github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// The pipeline every measuring command runs (load → analyze → write) is
// the package pipeline; the command line hands it its parts: the rules,
// the live progress line, the flag hints for the engine's warnings.
func pipelineOf(rules []pipe.Rule, progress *progressLine) *pipe.Pipeline {
	return pipe.New(pipelineOptions(rules, progress))
}

// pipelineOptions are the parts the command line gives the pipeline; the
// load engine and the writer are the pipeline's defaults.
func pipelineOptions(rules []pipe.Rule, progress *progressLine) pipe.Options {
	o := pipe.Options{Rules: rules, Warnings: hintWarnings}
	if progress != nil { // a nil *progressLine is not a nil UI
		o.UI = progress
	}
	return o
}

// pipeline is the pipeline under the name scale.go uses.
// TODO(issue 20): when scale.go takes pipelineOf, this type and
// newPipeline go, and the import of package pipeline loses its alias.
type pipeline struct{ *pipe.Pipeline }

func newPipeline(rules []pipe.Rule, progress *progressLine) *pipeline {
	return &pipeline{pipelineOf(rules, progress)}
}

func (p *pipeline) measure(ctx context.Context, label string, ml probes.Microload, t *probes.Target, o probes.LoadOptions) (*report.RunReport, *probes.Run, error) {
	return p.Measure(ctx, label, ml, t, o)
}

// warningHints are the command-line flags that answer a warning of the load
// engine; the library names the problem, the command names the flag.
var warningHints = map[string]string{
	"generator-bound": "try --pin",
	"rate-not-kept":   "raise --concurrency",
}

func hintWarnings(ws []probes.Warning) {
	for i, w := range ws {
		if h, ok := warningHints[w.Kind]; ok {
			ws[i].Message += " (" + h + ")"
		}
	}
}
