package cli

import (
	"context"
	"errors"
	"flag"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/production"
)

// analyzeCommand is `probe analyze [--json] [--rules FILE] PROFILE…`: the
// pipeline's analyze step on profiles taken anywhere
// (pipeline.AnalyzeProfiles). It writes no folder: the findings go to
// stdout. With --from pyroscope://… or parca://… it reads a service's
// merged profile from the fleet's continuous profiler instead, and writes
// a report folder (the flame graph is a file).
func analyzeCommand(fs *flag.FlagSet) runner {
	var output outputFlags
	output.name = "analyze"
	fs.BoolVar(&output.json, "json", false, "print the findings as JSON on stdout")
	fs.StringVar(&output.out, "out", "", "with --from: report folder (default probe-out/analyze-<time>/); it must be new or empty")
	fs.BoolVar(&output.force, "force", false, "use a non-empty --out: clear probe's files from it first")
	var prof profileFlags
	fs.StringVar(&prof.rules, "rules", "", "more analyzer rules, a JSON or Jsonnet file")
	prof.registerMaxProfile(fs)
	var prod productionFlags
	prod.register(fs, "from", "read the profiles from a continuous profiler: pyroscope://HOST:PORT or parca://HOST:PORT (+https for TLS)", time.Hour, "")
	return func(ctx context.Context, s streams, paths []string) error {
		if prod.from != "" {
			return analyzeProduction(ctx, s, &output, &prof, &prod, paths)
		}
		if len(paths) == 0 {
			return usageError{"usage: probe analyze [--json] [--rules FILE] PROFILE… or probe analyze --from pyroscope://HOST:PORT --service NAME"}
		}
		if output.out != "" {
			return usageError{"--out is for --from: probe analyze PROFILE… prints its findings"}
		}
		sess, err := begin(ctx, s, start{checks: []error{prof.validate()}, output: &output, printOnly: true, profile: &prof})
		if err != nil {
			return err
		}
		cpu, allocs, warnings, err := pipeline.ReadProfiles(paths, int64(prof.maxProfile))
		if errors.Is(err, pipeline.ErrTwoAllocationProfiles) {
			return usageError{err.Error()}
		}
		if err != nil {
			return err
		}
		pf := pipeline.AnalyzeProfiles(ctx, paths, cpu, allocs, sess.rules)
		pf.Warnings = append(warnings, pf.Warnings...)
		return sess.finish(pf, interrupted(ctx))
	}
}

// analyzeProduction is probe analyze --from: the merged profile fetched
// before the folder is claimed, so a bad engine leaves none behind.
func analyzeProduction(ctx context.Context, s streams, output *outputFlags, prof *profileFlags, prod *productionFlags, paths []string) error {
	if len(paths) > 0 {
		return usageError{"--from reads the profiles from the profiler: name no profile file"}
	}
	var src *production.Source
	var q production.Query
	var p *profile.Profile
	var invalid string
	sess, err := begin(ctx, s, start{checks: []error{prof.validate()}, output: output, profile: prof, before: func() error {
		var err error
		if src, err = prod.source("from", int64(prof.maxProfile)); err != nil {
			return err
		}
		if q, err = prod.query(time.Now()); err != nil {
			return err
		}
		p, invalid, err = src.FetchChecked(ctx, q)
		return err
	}})
	if err != nil {
		return err
	}
	d := pipeline.AnalyzeProduction(ctx, src, q, p, sess.rules)
	if invalid != "" {
		d.Warnings = append([]probes.Warning{{Kind: "profile-invalid", Message: src.String() + ": " + invalid}}, d.Warnings...)
	}
	return sess.finish(d, nil)
}

// interrupted is the exit error of a printed analysis that Ctrl-C or
// SIGTERM ended (exit 130): what it had is printed.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return errors.New("the analysis was interrupted: the findings printed are those complete before it")
	}
	return nil
}
