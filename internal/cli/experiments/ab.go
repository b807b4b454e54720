package experiments

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report/abreport"
	"github.com/probehq/probe/target"
)

// version is one side of a before/after comparison (abgit.go builds them).
type version = pipeline.Version

// abOptions are `probe ab`'s flags.
type abOptions struct {
	before, after, gitDir, beforeRef, afterRef, build, runCmd string
	fixture                                                   bool
	runs                                                      int
	startTimeout                                              time.Duration
	target                                                    shared.TargetFlags
	load                                                      shared.LoadFlags
	profile                                                   shared.ProfileFlags
	output                                                    shared.OutputFlags
	request                                                   shared.RequestFlags
}

func newABOptions(fs *flag.FlagSet) *abOptions {
	c := &abOptions{}
	fs.StringVar(&c.before, "before", "", "command that starts the old version ({addr} and {port} are replaced; PORT and ADDR are set)")
	fs.StringVar(&c.after, "after", "", "command that starts the new version")
	fs.StringVar(&c.gitDir, "git", "", "a Go repository: build --before-ref and --after-ref in temporary worktrees")
	fs.StringVar(&c.beforeRef, "before-ref", "", "with --git: the old commit, branch or tag")
	fs.StringVar(&c.afterRef, "after-ref", "", "with --git: the new one")
	fs.StringVar(&c.build, "build", "go build -o {out} .", "with --git: the build command, run in each worktree; {out} is the binary")
	fs.StringVar(&c.runCmd, "run", "{out} -addr {addr}", "with --git: the command that starts a built version")
	fs.BoolVar(&c.fixture, "fixture", false, "the built-in demo: the fixture in per-request mode (before) against load-time mode (after)")
	fs.IntVar(&c.runs, "runs", abreport.MinRuns, "runs per side and microload, interleaved A B A B (6 is the least for a 95% "+
		"confidence interval)")
	fs.DurationVar(&c.startTimeout, "start-timeout", 3*time.Minute, "longest wait for a version to listen")
	c.target.Register(fs, shared.TargetOptions{FixtureOnly: true})
	c.load.Register(fs, shared.LoadDefaults{Duration: 5 * time.Second, DurationHelp: "measured time of one run", Warmup: time.Second,
		Timeout: 30 * time.Second, Concurrency: 32,
		Settle: true})
	c.profile.Register(fs, shared.ProfileOptions{ByDefault: true,
		Help: "profile every run (CPU and allocations per request, findings, differential flame graphs)"})
	c.output.Register(fs, "ab")
	c.output.RegisterGates(fs, "regressed, worse, p99_ms:ratio>1.1")
	c.request.Register(fs, shared.RequestOptions{
		PathHelp: "for the http microload: path and query", BodyHelp: "for the http microload: body", Method: "GET"})
	return c
}

func ABCommand(fs *flag.FlagSet) shared.Runner { return newABOptions(fs).run }

func (c *abOptions) run(ctx context.Context, s shared.Streams, names []string) error {
	if c.runs <= 0 {
		return shared.UsageError{Msg: "ab: --runs must be positive"}
	}
	sess, err := shared.Begin(ctx, s, shared.Start{
		Checks: []error{c.target.Validate(), c.load.Validate(), c.profile.Validate()},
		Gates:  "ab",
		Before: func() (err error) {
			names, err = c.microloadNames(names)
			return err
		},
		Output: &c.output, Load: &c.load, Profile: &c.profile,
	})
	if err != nil {
		return err
	}

	var a, b *version
	switch {
	case c.fixture:
		a, b = c.fixtureVersions()
	case c.gitDir != "":
		var cleanup func()
		a, b, cleanup, err = c.gitVersions(ctx, s.Stderr)
		if cleanup != nil {
			defer cleanup()
		}
	default:
		a, b, err = c.commandVersions()
	}
	if err != nil {
		return err
	}
	plan := pipeline.ABPlan{Runs: c.runs, Names: names, Profile: c.profile.Profile, Dir: sess.Dir, Settle: c.load.Settle,
		Microload: func(name string) probes.Microload {
			mls, _ := c.microloads([]string{name}) // checked before the runs
			return mls[0]
		},
		Target: func(u *url.URL, child *target.Child) *probes.Target {
			return &probes.Target{URL: u, Header: c.target.Header(), Child: child}
		},
		Options: func(u *url.URL, profiled bool) probes.LoadOptions {
			o := c.load.Options()
			if profiled {
				o.Profile = c.profile.Options(u, c.load.Duration)
			}
			return o
		},
	}
	fmt.Fprintf(s.Stderr, "probe: %d runs of %d microload(s) on each side, interleaved: before = %s, after = %s\n", c.runs, len(names),
		a.Label, b.Label)
	ab, err := shared.PipelineOf(sess.Rules, shared.NewProgressLine(s.Stderr)).Interleave(ctx, a, b, plan)
	a.Stop()
	b.Stop()
	if err != nil {
		return err
	}
	ab.Thresholds = sess.JudgeAB(ab)
	var failure error
	if len(ab.Failures) > 0 {
		failure = fmt.Errorf("%d run(s) failed (%s, %s); the report keeps the rest: %s", len(ab.Failures), ab.Failures[0].Side,
			ab.Failures[0].Reason, filepath.Join(sess.Dir, "report.md"))
	}
	return sess.Finish(ab, failure)
}

// microloadNames checks that one way of starting the versions is given,
// and that the microloads named (the fixture's by default) can be built.
func (c *abOptions) microloadNames(names []string) ([]string, error) {
	modes := 0
	for _, set := range []bool{c.before != "" || c.after != "", c.gitDir != "", c.fixture} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return nil, shared.UsageError{Msg: "ab: give --before CMD --after CMD, or --git DIR --before-ref A --after-ref B, or --fixture"}
	}
	if len(names) == 0 {
		if !c.fixture {
			return nil, shared.UsageError{Msg: "ab: name the microloads to compare (e.g. http --path /api, or sitemap search)"}
		}
		names = shared.FixtureABMicroloads
	}
	_, err := c.microloads(names)
	return names, err
}

// microloads are fresh microloads of the names, in order.
func (c *abOptions) microloads(names []string) ([]probes.Microload, error) {
	var out []probes.Microload
	for _, n := range names {
		if n == "http" {
			ml, err := c.request.HTTPMicroload()
			if err != nil {
				return nil, err
			}
			out = append(out, ml)
			continue
		}
		ml, err := shared.NamedMicroload(n, c.fixture)
		if err != nil {
			return nil, shared.UsageError{Msg: "ab: " + err.Error()}
		}
		out = append(out, ml)
	}
	return out, nil
}

func (c *abOptions) fixtureVersions() (*version, *version) {
	mk := func(side, mode string) *version {
		return &version{Side: side, Label: fmt.Sprintf("the fixture in %s mode (%d notes)", mode, c.target.Notes),
			Start: func(ctx context.Context) (*target.Child, error) {
				return shared.StartFixture(ctx, shared.FixtureStart{Mode: mode, Notes: c.target.Notes})
			}}
	}
	return mk("before", "per-request"), mk("after", "load-time")
}

func (c *abOptions) commandVersions() (*version, *version, error) {
	if c.before == "" || c.after == "" {
		return nil, nil, shared.UsageError{Msg: "ab: --before and --after go together"}
	}
	a, err := commandVersion("before", c.before, c.before, "", c.startTimeout)
	if err != nil {
		return nil, nil, err
	}
	b, err := commandVersion("after", c.after, c.after, "", c.startTimeout)
	return a, b, err
}

// commandVersion starts a server command on a fresh loopback port.
func commandVersion(side, label, command, dir string, wait time.Duration) (*version, error) {
	argv, err := shared.CommandWords(side, command)
	if err != nil {
		return nil, err
	}
	return &version{Side: side, Label: label, Start: func(ctx context.Context) (*target.Child, error) {
		return shared.StartCommand(ctx, argv, "", target.ChildSpec{Dir: dir, Wait: wait})
	}}, nil
}

// describeRef is how a version built from git is named in the report.
func describeRef(ref, sha, dir string) string {
	if len(sha) > 12 {
		sha = sha[:12]
	}
	return fmt.Sprintf("%s (%s) of %s", ref, sha, strings.TrimSuffix(dir, "/"))
}
