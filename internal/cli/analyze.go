package cli

import (
	"context"
	"errors"
	"flag"

	"github.com/probehq/probe/pipeline"
)

// analyzeCommand is `probe analyze [--json] [--rules FILE] PROFILE…`: the
// pipeline's analyze step on profiles taken anywhere
// (pipeline.AnalyzeProfiles). It writes no folder: the findings go to
// stdout.
func analyzeCommand(fs *flag.FlagSet) runner {
	var output outputFlags
	fs.BoolVar(&output.json, "json", false, "print the findings as JSON on stdout")
	var prof profileFlags
	fs.StringVar(&prof.rules, "rules", "", "more analyzer rules, a JSON or Jsonnet file")
	prof.registerMaxProfile(fs)
	return func(ctx context.Context, s streams, paths []string) error {
		if len(paths) == 0 {
			return usageError{"usage: probe analyze [--json] [--rules FILE] PROFILE…"}
		}
		sess, err := begin(ctx, s, start{checks: []error{prof.validate()}, output: &output, printOnly: true, profile: &prof})
		if err != nil {
			return err
		}
		cpu, allocs, err := pipeline.ReadProfiles(paths, int64(prof.maxProfile))
		if errors.Is(err, pipeline.ErrTwoAllocationProfiles) {
			return usageError{err.Error()}
		}
		if err != nil {
			return err
		}
		return sess.finish(pipeline.AnalyzeProfiles(paths, cpu, allocs, sess.rules), nil)
	}
}
