package analysis

import (
	"context"
	"errors"
	"flag"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes/production"
	"github.com/probehq/probe/result"
)

// analyzeCommand is `probe analyze [--json] [--rules FILE] PROFILE…`: the
// pipeline's analyze step on profiles taken anywhere
// (pipeline.AnalyzeProfiles). It writes no folder: the findings go to
// stdout. With --from pyroscope://… or parca://… it reads a service's
// merged profile from the fleet's continuous profiler instead, and writes
// a report folder (the flame graph is a file).
func AnalyzeCommand(fs *flag.FlagSet) shared.Runner {
	var output shared.OutputFlags
	output.Name = "analyze"
	fs.BoolVar(&output.JSON, "json", false, "print the findings as JSON on stdout")
	fs.StringVar(&output.Out, "out", "", "with --from: report folder (default probe-out/analyze-<time>/); it must be new or empty")
	fs.BoolVar(&output.Force, "force", false, "use a non-empty --out: clear probe's files from it first")
	var prof shared.ProfileFlags
	fs.StringVar(&prof.Rules, "rules", "", "more analyzer rules, a JSON or Jsonnet file")
	prof.RegisterMaxProfile(fs)
	var prod shared.ProductionFlags
	prod.Register(fs, "from", "read the profiles from a continuous profiler: pyroscope://HOST:PORT or parca://HOST:PORT (+https for TLS)", time.Hour, "")
	return func(ctx context.Context, s shared.Streams, paths []string) error {
		if prod.From != "" {
			return analyzeProduction(ctx, s, &output, &prof, &prod, paths)
		}
		if len(paths) == 0 {
			return shared.UsageError{Msg: "usage: probe analyze [--json] [--rules FILE] PROFILE… or probe analyze --from " +
				"pyroscope://HOST:PORT --service NAME"}
		}
		if output.Out != "" {
			return shared.UsageError{Msg: "--out is for --from: probe analyze PROFILE… prints its findings"}
		}
		sess, err := shared.Begin(ctx, s, shared.Start{Checks: []error{prof.Validate()}, Output: &output, PrintOnly: true, Profile: &prof})
		if err != nil {
			return err
		}
		cpu, allocs, warnings, err := pipeline.ReadProfiles(paths, int64(prof.MaxProfile))
		if errors.Is(err, pipeline.ErrTwoAllocationProfiles) {
			return shared.UsageError{Msg: err.Error()}
		}
		if err != nil {
			return err
		}
		pf := pipeline.AnalyzeProfiles(ctx, paths, cpu, allocs, sess.Rules)
		pf.Warnings = append(warnings, pf.Warnings...)
		return sess.Finish(pf, interrupted(ctx))
	}
}

// analyzeProduction is probe analyze --from: the merged profile fetched
// before the folder is claimed, so a bad engine leaves none behind.
func analyzeProduction(ctx context.Context, s shared.Streams, output *shared.OutputFlags, prof *shared.ProfileFlags, prod *shared.ProductionFlags,
	paths []string) error {
	if len(paths) > 0 {
		return shared.UsageError{Msg: "--from reads the profiles from the profiler: name no profile file"}
	}
	var src *production.Source
	var q production.Query
	var p *profile.Profile
	var invalid string
	sess, err := shared.Begin(ctx, s, shared.Start{Checks: []error{prof.Validate()}, Output: output, Profile: prof, Before: func() error {
		var err error
		if src, err = prod.Source("from", int64(prof.MaxProfile)); err != nil {
			return err
		}
		if q, err = prod.Query(time.Now()); err != nil {
			return err
		}
		p, invalid, err = src.FetchChecked(ctx, q)
		return err
	}})
	if err != nil {
		return err
	}
	d := pipeline.AnalyzeProduction(ctx, src, q, p, sess.Rules)
	if invalid != "" {
		d.Warnings = append([]result.Warning{{Kind: "profile-invalid", Message: src.String() + ": " + invalid}}, d.Warnings...)
	}
	return sess.Finish(d, nil)
}

// interrupted is the exit error of a printed analysis that Ctrl-C or
// SIGTERM ended (exit 130): what it had is printed.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return errors.New("the analysis was interrupted: the findings printed are those complete before it")
	}
	return nil
}
