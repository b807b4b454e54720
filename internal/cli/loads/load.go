package loads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
)

// loadCommand is `probe <microload>`, `probe all` and `probe http`.
type loadCommand struct {
	name    string
	target  shared.TargetFlags
	load    shared.LoadFlags
	profile shared.ProfileFlags
	output  shared.OutputFlags
	request shared.RequestFlags   // probe http
	grpc    grpcFlags             // probe grpc
	shape   shared.MicroloadFlags // a named microload's endpoints
	writes  shared.WriteFlags     // reads during writes
	src     srcFlags              // --src: the target built from source

	fleet shared.ProductionFlags // probe all --production
}

func MicroloadCommand(name string) func(fs *flag.FlagSet) shared.Runner {
	return func(fs *flag.FlagSet) shared.Runner { return NewLoadCommand(fs, name) }
}

func AllCommand(fs *flag.FlagSet) shared.Runner  { return NewLoadCommand(fs, "all") }
func HTTPCommand(fs *flag.FlagSet) shared.Runner { return NewLoadCommand(fs, "http") }

func NewLoadCommand(fs *flag.FlagSet, name string) shared.Runner {
	c := &loadCommand{name: name}
	c.target.Register(fs, shared.TargetOptions{})
	c.target.RegisterHTTP2(fs)
	c.load.Register(fs, shared.LoadDefaults{Duration: 10 * time.Second, Warmup: 2 * time.Second, Timeout: 30 * time.Second, Concurrency: 32,
		Settle: name == "all", Auto: true, Shard: true})
	c.profile.Register(fs, shared.ProfileOptions{
		Help: "profile the target while the load runs, and name the per-request work that could move to load time"})
	c.output.Register(fs, name)
	c.output.RegisterGates(fs, "p99_ms>250, errors>0.1%, rps<100, finding:load-time, finding:repeated-gzip>10%")
	if name == "http" {
		c.request.Register(fs, shared.RequestOptions{
			PathHelp: "path and query to request, e.g. /api/items?page=1", BodyHelp: "request body", Method: "GET", Param: true})
	}
	if name == "grpc" {
		c.grpc.register(fs)
	}
	c.shape.Register(fs, name)
	if name != "grpc" {
		c.src.register(fs)
	}
	if name != "all" {
		c.writes.Register(fs)
	} else {
		c.fleet.Register(fs, "production", "with --profile: weigh each finding by its share of this fleet's CPU: "+
			"pyroscope://HOST:PORT or parca://HOST:PORT",
			24*time.Hour, "production-")
	}
	return c.run
}

// failedChecks: the run completed but replies failed their checks, or it
// ended early.
type FailedChecks struct {
	Requests, Errors int64
	lost             int // writes never seen (--during-writes)
	Ended, Dir       string
}

func (e FailedChecks) Error() string {
	switch {
	case e.Ended != "":
		return fmt.Sprintf("the run ended early (%s); what was measured is in %s", e.Ended, e.Dir)
	case e.Errors == 0 && e.lost > 0:
		return fmt.Sprintf("%d writes never showed within --freshness-timeout (lost writes); see %s", e.lost, filepath.Join(e.Dir, "report.md"))
	case e.lost > 0:
		return fmt.Sprintf("%d of %d requests failed their checks and %d writes never showed; see %s", e.Errors, e.Requests, e.lost,
			filepath.Join(e.Dir, "report.md"))
	}
	return fmt.Sprintf("%d of %d requests failed their checks; see %s", e.Errors, e.Requests, filepath.Join(e.Dir, "report.md"))
}

func (c *loadCommand) run(ctx context.Context, s shared.Streams, words []string) error {
	if err := shared.NoWords(c.name, words); err != nil {
		return err
	}
	if c.name == "grpc" {
		c.grpc.forFixture(c.target.Target == "" && c.target.File == "")
		c.target.HTTP2 = true // gRPC is HTTP/2's
	}
	var fleet *shared.FleetProfile
	sess, err := shared.Begin(ctx, s, shared.Start{
		Checks: []error{c.target.Validate(), c.load.Validate(), c.profile.Validate(), c.writes.Validate(c.load), c.checkShard(),
			c.src.validate(&c.target, c.profile.Profile)},
		Gates: "run", Output: &c.output, Load: &c.load, Profile: &c.profile,
		Before: func() (err error) { fleet, err = c.fleet.FetchFleet(ctx, &c.profile); return err },
	})
	if err != nil {
		return err
	}
	dir := sess.Dir
	file, err := shared.ReadFileFlag(ctx, &c.target, &c.profile)
	if err != nil {
		return err
	}
	if file == nil && c.name != "all" && c.name != "http" && c.name != "grpc" && shared.FlagHints[c.name] == "" {
		return shared.UsageError{Msg: fmt.Sprintf("unknown command %q (see probe --help)", c.name)}
	}
	// The microloads are built before the target is opened: a bad flag
	// must not wait for a fixture to load.
	fixture := c.target.Target == "" && c.src.Dir == ""
	loads, err := c.microloads(fixture, file)
	if err != nil {
		return err
	}
	var target *probes.Target
	var warnings []result.Warning
	var cleanup func()
	if c.src.Dir != "" {
		target, cleanup, err = c.src.open(ctx, &c.target, file, s.Stderr)
	} else {
		target, warnings, cleanup, err = shared.OpenTarget(ctx, &c.target, file, s.Stderr)
	}
	if err != nil {
		return err
	}
	defer cleanup()

	p := shared.PipelineOf(sess.Rules, shared.NewProgressLine(s.Stderr)).WithExperiment(c.profile.ExperimentBudget())
	o := c.load.Options()
	o.Profile = c.profile.Options(target.URL, c.load.Duration)
	o = c.shardOptions(s.Stderr, o)
	suite := &pipeline.Suite{Target: target, Options: o, Settle: c.load.Settle, AutoClients: c.load.AutoConcurrency,
		// A slow first reply gets its clients chosen: always in probe all,
		// unless --concurrency was given in the others; a shard keeps its
		// part of the fleet's clients.
		ChooseWhenSlow: !c.load.Shard.On && (c.name == "all" || !c.load.ConcurrencyGiven),
		KeepGoing:      c.name == "all", Overhead: c.profile.Overhead,
		Prepare: func(ml probes.Microload) probes.Microload {
			watchFor(ml, o, s.Stderr)
			return c.load.Shard.Split(ml)
		},
		Finish: func(rep *report.Run, run *result.Run, ml probes.Microload, o probes.LoadOptions) error {
			streamReport(rep, ml)
			return c.attachShard(rep, run, o)
		},
		Explain: shared.NeedsFlag, MaxReason: shared.MaxErrorLine, Warnings: warnings, Rules: sess.Rules,
		Say: func(line string) { fmt.Fprintf(s.Stderr, "probe: %s\n", line) }}
	if c.src.Verify {
		finish := suite.Finish
		suite.Finish = func(rep *report.Run, run *result.Run, ml probes.Microload, o probes.LoadOptions) error {
			if err := finish(rep, run, ml, o); err != nil {
				return err
			}
			fresh := func() probes.Microload { return c.freshMicroload(ml, file) }
			c.src.verification(ctx, p, rep, run, o, target, fresh, suite.Say)
			return nil
		}
	}
	if c.writes.Rate > 0 {
		suite.Writes = func(ctx context.Context) *probes.WriteLoad {
			return c.writes.WriteLoad(ctx, target, c.target.Key, fixture, c.load.Timeout)
		}
	}
	got, err := suite.Run(ctx, p, loads)
	if err != nil {
		return err
	}
	reports, skipped, skipWarnings := got.Reports, got.Skipped, got.Warnings
	if len(reports) == 0 && len(skipped) == 0 {
		return errors.New("interrupted before anything was measured")
	}
	var doc report.Document
	var failed bool
	var requests, errs int64
	var ended string
	var lost int
	fleet.Weigh(reports)
	verdicts := sess.JudgeRuns(reports)
	if c.name == "all" {
		suite := report.NewSuite(target.URL.String(), reports)
		suite.Skipped, suite.Thresholds = skipped, verdicts
		for _, w := range skipWarnings {
			suite.Warnings = result.AddWarning(suite.Warnings, w.Kind, w.Message)
		}
		doc, failed = suite, suite.Failed()
		requests, errs, ended = suite.Latency.Requests, suite.Latency.Errors, suite.Ended
	} else {
		reports[0].Thresholds = verdicts
		doc, failed = reports[0], reports[0].Failed()
		requests, errs, ended = reports[0].Latency.Requests, reports[0].Latency.Errors, reports[0].Ended
	}
	for _, r := range reports {
		lost += r.LostWrites()
	}
	var failure error
	switch {
	case len(reports) == 0:
		failure = fmt.Errorf("nothing could be measured (%d microloads skipped: %s); see %s", len(skipped), skipped[0].Reason,
			filepath.Join(dir, "report.md"))
	case failed:
		failure = FailedChecks{Requests: requests, Errors: errs, lost: lost, Ended: ended, Dir: dir}
	}
	return sess.Finish(doc, failure)
}

// microloads are the command's: one by name, every one for all, or the
// request of probe http; fixture says the target is the fixture probe
// started (its note queries are known).
func (c *loadCommand) microloads(fixture bool, file *shared.TargetFile) ([]probes.Microload, error) {
	if file != nil && c.name != "http" && c.name != "grpc" {
		var out []probes.Microload
		for _, m := range file.Microloads {
			if c.name == "all" || m.Name == c.name {
				ml, err := m.Microload()
				if err != nil {
					return nil, err
				}
				out = append(out, ml)
			}
		}
		for _, m := range file.Microloads { // probe search --file: the file's search
			if len(out) == 0 && m.Use == c.name {
				ml, err := m.Microload()
				if err != nil {
					return nil, err
				}
				out = append(out, ml)
			}
		}
		if len(out) == 0 {
			return nil, shared.UsageError{Msg: fmt.Sprintf("--file %s has no microload named %q", file.Path, c.name)}
		}
		return out, nil
	}
	switch c.name {
	case "all":
		var out []probes.Microload
		for _, n := range shared.FixtureMicroloads {
			ml, err := shared.NamedMicroload(n, fixture)
			if err != nil {
				return nil, err
			}
			out = append(out, ml)
		}
		return out, nil
	case "http":
		ml, err := c.request.HTTPMicroload()
		if err != nil {
			return nil, err
		}
		return []probes.Microload{ml}, nil
	case "grpc":
		ml, err := c.grpc.microload()
		if err != nil {
			return nil, err
		}
		return []probes.Microload{ml}, nil
	}
	ml, err := c.shape.Build(c.name, fixture)
	if err != nil {
		return nil, err
	}
	return []probes.Microload{ml}, nil
}

// freshMicroload is a new copy of the run's microload ran, for --verify's
// rounds (a microload keeps what its Prepare learnt); ran itself if it
// cannot be made again.
func (c *loadCommand) freshMicroload(ran probes.Microload, file *shared.TargetFile) probes.Microload {
	loads, err := c.microloads(false, file)
	if err == nil {
		for _, ml := range loads {
			if ml.Name() == ran.Name() {
				return ml
			}
		}
	}
	return ran
}
