package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// version is one side of a before/after comparison: how to start it, and
// the process while it runs.
type version struct {
	side   string // "before" or "after"
	label  string
	start  func(ctx context.Context) (*probes.Child, error)
	child  *probes.Child
	broken string // why it cannot run any more; empty while it can
	pprof  bool
}

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
	c.load.register(fs, loadDefaults{duration: 5 * time.Second, durationHelp: "measured time of one run", warmup: time.Second, timeout: 30 * time.Second, concurrency: 32})
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
	for _, err := range []error{c.target.validate(), c.load.validate(), c.profile.validate()} {
		if err != nil {
			return err
		}
	}
	gates, err := parseThresholds(c.output.failOn, "ab")
	if err != nil {
		return err
	}
	dir, err := c.output.claim()
	if err != nil {
		return err
	}
	c.load.limitMemory()
	modes := 0
	for _, set := range []bool{c.before != "" || c.after != "", c.gitDir != "", c.fixture} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return usageError{"ab: give --before CMD --after CMD, or --git DIR --before-ref A --after-ref B, or --fixture"}
	}
	if len(names) == 0 {
		if !c.fixture {
			return usageError{"ab: name the microloads to compare (e.g. http --path /api, or sitemap search)"}
		}
		names = fixtureABMicroloads
	}
	if _, err := c.microloads(names); err != nil {
		return err
	}
	rules, err := c.profile.loadRules(ctx)
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
	ab, err := c.interleave(ctx, a, b, names, newPipeline(rules, newProgressLine(s.stderr)), dir, s)
	for _, v := range []*version{a, b} {
		if v.child != nil {
			v.child.Stop()
		}
	}
	if err != nil {
		return err
	}
	var broken []string
	ab.Thresholds, broken = judgeAB(gates, ab)
	if err := writeAndShow(ab, dir, c.output.json, s); err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return interruptedError{dir}
	case len(ab.Failures) > 0:
		return fmt.Errorf("%d run(s) failed (%s, %s); the report keeps the rest: %s", len(ab.Failures), ab.Failures[0].Side, ab.Failures[0].Reason, filepath.Join(dir, "report.md"))
	case len(broken) > 0:
		return thresholdsBroken{broken}
	}
	return nil
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
		return &version{side: side, label: fmt.Sprintf("the fixture in %s mode (%d notes)", mode, c.target.notes),
			start: func(ctx context.Context) (*probes.Child, error) {
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
	return &version{side: side, label: label, start: func(ctx context.Context) (*probes.Child, error) {
		return startCommand(ctx, argv, "", probes.ChildSpec{Dir: dir, Wait: wait})
	}}, nil
}

// ensure starts v if it is not running; a version that will not start is
// broken for the rest of the session.
func (v *version) ensure(ctx context.Context) error {
	if v.broken != "" {
		return errors.New(v.broken)
	}
	if v.child != nil {
		select {
		case <-v.child.Exited():
		default:
			return nil
		}
	}
	ch, err := v.start(ctx)
	if err != nil {
		if ctx.Err() == nil {
			v.broken = "does not start: " + err.Error()
		}
		return err
	}
	v.child = ch
	u, _ := url.Parse(ch.URL)
	v.pprof = probes.CheckPprof(ctx, u.JoinPath("/debug/pprof/")) == nil
	return nil
}

// interleave runs every microload on both versions, A B A B, --runs times
// each, through the same pipeline as probe <microload>; writes each run's
// report folder, and compares the folders as probe compare does.
func (c *abOptions) interleave(ctx context.Context, a, b *version, names []string, p *pipeline, dir string, s streams) (*report.AB, error) {
	sides := [2]map[string][]*report.RunData{{}, {}}
	var failures []report.SideFailure
	fmt.Fprintf(s.stderr, "probe: %d runs of %d microload(s) on each side, interleaved: before = %s, after = %s\n", c.runs, len(names), a.label, b.label)
	for run := 1; run <= c.runs && ctx.Err() == nil; run++ {
		for _, name := range names {
			for i, v := range []*version{a, b} {
				if ctx.Err() != nil || v.broken != "" {
					continue
				}
				fail := func(reason string) {
					if ctx.Err() == nil {
						failures = append(failures, report.SideFailure{Side: v.side, Run: run, Microload: name, Reason: reason})
					}
				}
				if err := v.ensure(ctx); err != nil {
					fail(v.broken)
					continue
				}
				mls, _ := c.microloads([]string{name}) // checked before the runs
				u, _ := url.Parse(v.child.URL)
				target := &probes.Target{URL: u, Header: c.target.header(), Child: v.child}
				o := c.load.options()
				if v.pprof {
					o.Profile = c.profile.options(u, c.load.duration)
				}
				rep, r, err := p.measure(ctx, fmt.Sprintf("ab %d/%d %s %s", run, c.runs, name, v.side), mls[0], target, o)
				if err != nil {
					fail(err.Error())
					continue
				}
				if c.profile.profile && !v.pprof {
					rep.Warn("no-pprof", "the "+v.side+" version serves no /debug/pprof: CPU and allocations per request come from its process figures only")
				}
				runDir := filepath.Join(dir, "runs", name, fmt.Sprintf("%s-%d", v.side, run))
				if err := report.WriteFolder(runDir, rep); err != nil {
					return nil, fmt.Errorf("writing %s: %v", runDir, err)
				}
				if r.Ended != "" {
					// Partial figures would skew the medians: the run is
					// named, not counted.
					fail("the run ended early: " + r.Ended)
					continue
				}
				d, err := report.LoadRun(runDir)
				if err != nil {
					return nil, err
				}
				sides[i][name] = append(sides[i][name], d)
			}
		}
	}
	if len(sides[0])+len(sides[1]) == 0 {
		if ctx.Err() != nil {
			return nil, errors.New("interrupted before anything was measured")
		}
		if len(failures) > 0 {
			return nil, fmt.Errorf("nothing was measured: %s %s", failures[0].Side, failures[0].Reason)
		}
	}
	ab := compareSides(a.label, b.label, sides[0], sides[1], failures)
	ab.Order = "interleaved A B A B: each microload's run on the before version, then on the after version, both processes alive throughout"
	return ab, nil
}

// describeRef is how a version built from git is named in the report.
func describeRef(ref, sha, dir string) string {
	if len(sha) > 12 {
		sha = sha[:12]
	}
	return fmt.Sprintf("%s (%s) of %s", ref, sha, strings.TrimSuffix(dir, "/"))
}
