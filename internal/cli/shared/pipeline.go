package shared

import (
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/result"
)

// The pipeline every measuring command runs (load → analyze → write) is
// the package pipeline; the command line hands it its parts: the rules,
// the live progress line, the flag hints for the engine's warnings.
func PipelineOf(rules []pipeline.Rule, progress *progressLine) *pipeline.Pipeline {
	return pipeline.New(PipelineOptions(rules, progress))
}

// pipelineOptions are the parts the command line gives the pipeline; the
// load engine and the writer are the pipeline's defaults.
func PipelineOptions(rules []pipeline.Rule, progress *progressLine) pipeline.Options {
	o := pipeline.Options{Rules: rules, Warnings: HintWarnings}
	if progress != nil { // a nil *progressLine is not a nil UI
		o.UI = progress
	}
	return o
}

// warningHints are the command-line flags that answer a warning of the load
// engine; the library names the problem, the command names the flag.
var warningHints = map[string]string{
	"generator-bound": "try --pin",
	"rate-not-kept":   "raise --concurrency",
}

func HintWarnings(ws []result.Warning) {
	for i, w := range ws {
		if h, ok := warningHints[w.Kind]; ok {
			ws[i].Message += " (" + h + ")"
		}
	}
}
