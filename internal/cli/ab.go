package cli

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// version is one side of a before/after comparison (abgit.go builds them).
type version = pipeline.Version

// abOptions are `probe ab`'s flags.
type abOptions struct {
	before, after, gitDir, beforeRef, afterRef, build, runCmd string
	fixture                                                   bool
	runs                                                      int
	startTimeout                                              time.Duration
	target                                                    targetFlags
	load                                                      loadFlags
	profile                                                   profileFlags
	output                                                    outputFlags
	request                                                   requestFlags
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
	fs.IntVar(&c.runs, "runs", report.MinRuns, "runs per side and microload, interleaved A B A B (6 is the least for a 95% confidence interval)")
	fs.DurationVar(&c.startTimeout, "start-timeout", 3*time.Minute, "longest wait for a version to listen")
	c.target.register(fs, true)
	c.load.register(fs, loadDefaults{duration: 5 * time.Second, durationHelp: "measured time of one run", warmup: time.Second, timeout: 30 * time.Second, concurrency: 32,
		settle: true})
	c.profile.register(fs, true, "profile every run (CPU and allocations per request, findings, differential flame graphs)")
	c.output.register(fs, "ab")
	c.output.registerGates(fs, "regressed, worse, p99_ms:ratio>1.1")
	c.request.register(fs, "for the http microload: path and query", "for the http microload: body", "GET", false)
	return c
}

func abCommand(fs *flag.FlagSet) runner { return newABOptions(fs).run }

func (c *abOptions) run(ctx context.Context, s streams, names []string) error {
	if c.runs <= 0 {
		return usageError{"ab: --runs must be positive"}
	}
	sess, err := begin(ctx, s, start{
		checks: []error{c.target.validate(), c.load.validate(), c.profile.validate()},
		gates:  "ab",
		before: func() (err error) {
			names, err = c.microloadNames(names)
			return err
		},
		output: &c.output, load: &c.load, profile: &c.profile,
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
		a, b, cleanup, err = c.gitVersions(ctx, s.stderr)
		if cleanup != nil {
			defer cleanup()
		}
	default:
		a, b, err = c.commandVersions()
	}
	if err != nil {
		return err
	}
	plan := pipeline.ABPlan{Runs: c.runs, Names: names, Profile: c.profile.profile, Dir: sess.dir, Settle: c.load.settle,
		Microload: func(name string) probes.Microload {
			mls, _ := c.microloads([]string{name}) // checked before the runs
			return mls[0]
		},
		Target: func(u *url.URL, child *probes.Child) *probes.Target {
			return &probes.Target{URL: u, Header: c.target.header(), Child: child}
		},
		Options: func(u *url.URL, profiled bool) probes.LoadOptions {
			o := c.load.options()
			if profiled {
				o.Profile = c.profile.options(u, c.load.duration)
			}
			return o
		},
	}
	fmt.Fprintf(s.stderr, "probe: %d runs of %d microload(s) on each side, interleaved: before = %s, after = %s\n", c.runs, len(names), a.Label, b.Label)
	ab, err := pipelineOf(sess.rules, newProgressLine(s.stderr)).Interleave(ctx, a, b, plan)
	a.Stop()
	b.Stop()
	if err != nil {
		return err
	}
	ab.Thresholds = sess.judgeAB(ab)
	var failure error
	if len(ab.Failures) > 0 {
		failure = fmt.Errorf("%d run(s) failed (%s, %s); the report keeps the rest: %s", len(ab.Failures), ab.Failures[0].Side, ab.Failures[0].Reason, filepath.Join(sess.dir, "report.md"))
	}
	return sess.finish(ab, failure)
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
		return nil, usageError{"ab: give --before CMD --after CMD, or --git DIR --before-ref A --after-ref B, or --fixture"}
	}
	if len(names) == 0 {
		if !c.fixture {
			return nil, usageError{"ab: name the microloads to compare (e.g. http --path /api, or sitemap search)"}
		}
		names = fixtureABMicroloads
	}
	_, err := c.microloads(names)
	return names, err
}

// microloads are fresh microloads of the names, in order.
func (c *abOptions) microloads(names []string) ([]probes.Microload, error) {
	var out []probes.Microload
	for _, n := range names {
		if n == "http" {
			ml, err := c.request.httpMicroload()
			if err != nil {
				return nil, err
			}
			out = append(out, ml)
			continue
		}
		ml, err := namedMicroload(n, c.fixture)
		if err != nil {
			return nil, usageError{"ab: " + err.Error()}
		}
		out = append(out, ml)
	}
	return out, nil
}

func (c *abOptions) fixtureVersions() (*version, *version) {
	mk := func(side, mode string) *version {
		return &version{Side: side, Label: fmt.Sprintf("the fixture in %s mode (%d notes)", mode, c.target.notes),
			Start: func(ctx context.Context) (*probes.Child, error) {
				return startFixture(ctx, fixtureStart{mode: mode, notes: c.target.notes})
			}}
	}
	return mk("before", "per-request"), mk("after", "load-time")
}

func (c *abOptions) commandVersions() (*version, *version, error) {
	if c.before == "" || c.after == "" {
		return nil, nil, usageError{"ab: --before and --after go together"}
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
	argv, err := commandWords(side, command)
	if err != nil {
		return nil, err
	}
	return &version{Side: side, Label: label, Start: func(ctx context.Context) (*probes.Child, error) {
		return startCommand(ctx, argv, "", probes.ChildSpec{Dir: dir, Wait: wait})
	}}, nil
}

// describeRef is how a version built from git is named in the report.
func describeRef(ref, sha, dir string) string {
	if len(sha) > 12 {
		sha = sha[:12]
	}
	return fmt.Sprintf("%s (%s) of %s", ref, sha, strings.TrimSuffix(dir, "/"))
}
