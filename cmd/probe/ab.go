package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mvdan.cc/sh/v3/shell"

	"probe/analyzers"
	"probe/analyzers/report"
	"probe/fixtures"
	"probe/probes"
	"probe/probes/h1"
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

// abFlags are `probe ab`'s flags.
type abFlags struct {
	before, after, gitDir, beforeRef, afterRef, build, runCmd string
	fixture, json, profile                                    bool
	runs, concurrency, notes                                  int
	duration, warmup, timeout, startTimeout                   time.Duration
	rate                                                      float64
	out, key, rules                                           string
	// probe http's
	path, method, body string
	headers            []string
}

// fixtureABLoads are the microloads `probe ab --fixture` runs: seed 002's
// four hot spots.
var fixtureABLoads = []string{"sitemap", "toolslist", "search", "notequery"}

func runAB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe ab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f abFlags
	fs.StringVar(&f.before, "before", "", "command that starts the old version ({addr} and {port} are replaced; PORT and ADDR are set)")
	fs.StringVar(&f.after, "after", "", "command that starts the new version")
	fs.StringVar(&f.gitDir, "git", "", "a Go repository: build --before-ref and --after-ref in temporary worktrees")
	fs.StringVar(&f.beforeRef, "before-ref", "", "with --git: the old commit, branch or tag")
	fs.StringVar(&f.afterRef, "after-ref", "", "with --git: the new one")
	fs.StringVar(&f.build, "build", "go build -o {out} .", "with --git: the build command, run in each worktree; {out} is the binary")
	fs.StringVar(&f.runCmd, "run", "{out} -addr {addr}", "with --git: the command that starts a built version")
	fs.BoolVar(&f.fixture, "fixture", false, "the built-in demo: the fixture in per-request mode (before) against load-time mode (after)")
	fs.IntVar(&f.runs, "runs", report.MinRuns, "runs per side and microload, interleaved A B A B (6 is the least for a 95% confidence interval)")
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "measured time of one run")
	fs.DurationVar(&f.warmup, "warmup", time.Second, "load before each measured run, not recorded")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "longest wait for one reply")
	fs.DurationVar(&f.startTimeout, "start-timeout", 3*time.Minute, "longest wait for a version to listen")
	fs.IntVar(&f.concurrency, "concurrency", 32, "virtual clients, one kept-alive connection each")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: requests per second")
	fs.BoolVar(&f.profile, "profile", true, "profile every run (CPU and allocations per request, findings, differential flame graphs)")
	fs.IntVar(&f.notes, "notes", 2000, "with --fixture: notes in the vault")
	fs.StringVar(&f.key, "key", "", "send Authorization: Bearer KEY")
	fs.StringVar(&f.rules, "rules", "", "more analyzer rules, a JSON or Jsonnet file")
	fs.StringVar(&f.out, "out", "", "report folder (default probe-out/ab-<time>/); each run's own report under runs/")
	fs.BoolVar(&f.json, "json", false, "print report.json on stdout and nothing else there")
	fs.StringVar(&f.path, "path", "", "for the http microload: path and query")
	fs.StringVar(&f.method, "method", "GET", "for the http microload: method")
	fs.StringVar(&f.body, "body", "", "for the http microload: body")
	fs.Func("header", "for the http microload: header Name:value (repeatable)", func(s string) error {
		f.headers = append(f.headers, s)
		return nil
	})
	names, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if f.runs <= 0 || f.duration <= 0 || f.concurrency <= 0 || f.warmup < 0 || f.timeout <= 0 || f.rate < 0 {
		return usageError{"ab: --runs, --duration, --concurrency and --timeout must be positive"}
	}
	modes := 0
	for _, set := range []bool{f.before != "" || f.after != "", f.gitDir != "", f.fixture} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return usageError{"ab: give --before CMD --after CMD, or --git DIR --before-ref A --after-ref B, or --fixture"}
	}
	if len(names) == 0 {
		if !f.fixture {
			return usageError{"ab: name the microloads to compare (e.g. http --path /api, or sitemap search)"}
		}
		names = fixtureABLoads
	}
	loads, err := f.microloads(names)
	if err != nil {
		return err
	}
	rules, err := rulesOf(f.rules)
	if err != nil {
		return err
	}

	var a, b *version
	switch {
	case f.fixture:
		a, b, err = f.fixtureVersions()
	case f.gitDir != "":
		var cleanup func()
		a, b, cleanup, err = f.gitVersions(ctx, stderr)
		if cleanup != nil {
			defer cleanup()
		}
	default:
		a, b, err = f.commandVersions()
	}
	if err != nil {
		return err
	}
	dir := outDir(f.out, "ab")
	ab, err := f.interleave(ctx, a, b, loads, rules, dir, stderr)
	for _, v := range []*version{a, b} {
		if v.child != nil {
			v.child.Stop()
		}
	}
	if err != nil {
		return err
	}
	if err := writeAndShow(ab, dir, "report.html", f.json, stdout, stderr); err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return interruptedError{dir}
	case len(ab.Failures) > 0:
		return fmt.Errorf("%d run(s) failed (%s, %s); the report keeps the rest: %s", len(ab.Failures), ab.Failures[0].Side, ab.Failures[0].Reason, filepath.Join(dir, "report.md"))
	}
	return nil
}

func (f *abFlags) microloads(names []string) ([]probes.Microload, error) {
	var out []probes.Microload
	for _, n := range names {
		if n == "http" {
			lf := loadFlags{path: f.path, method: f.method, body: f.body, headers: f.headers}
			ml, err := microloads("http", &lf)
			if err != nil {
				return nil, err
			}
			out = append(out, ml...)
			continue
		}
		ml, ok := probes.MicroloadByName(n)
		if !ok {
			return nil, usageError{fmt.Sprintf("ab: unknown microload %q (toolslist sitemap search notequery feed page http)", n)}
		}
		out = append(out, ml)
	}
	return out, nil
}

func (f *abFlags) fixtureVersions() (*version, *version, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	mk := func(side, mode string) *version {
		return &version{side: side, label: fmt.Sprintf("the fixture in %s mode (%d notes)", mode, f.notes),
			start: func(ctx context.Context) (*probes.Child, error) {
				return probes.StartFixture(ctx, probes.FixtureOptions{Executable: exe, Mode: mode, Notes: f.notes, Key: fixtures.DefaultKey})
			}}
	}
	return mk("before", "per-request"), mk("after", "load-time"), nil
}

func (f *abFlags) commandVersions() (*version, *version, error) {
	if f.before == "" || f.after == "" {
		return nil, nil, usageError{"ab: --before and --after go together"}
	}
	a, err := commandVersion("before", f.before, f.before, "", f.startTimeout)
	if err != nil {
		return nil, nil, err
	}
	b, err := commandVersion("after", f.after, f.after, "", f.startTimeout)
	return a, b, err
}

// commandVersion starts a server command on a fresh loopback port.
func commandVersion(side, label, command, dir string, wait time.Duration) (*version, error) {
	argv, err := shell.Fields(command, func(string) string { return "" })
	if err != nil || len(argv) == 0 {
		return nil, usageError{fmt.Sprintf("--%s %q: not a command: %v", side, command, err)}
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
	c, err := v.start(ctx)
	if err != nil {
		if ctx.Err() == nil {
			v.broken = "does not start: " + err.Error()
		}
		return err
	}
	v.child = c
	u, _ := url.Parse(c.URL)
	v.pprof = probes.CheckPprof(ctx, u.JoinPath("/debug/pprof/")) == nil
	return nil
}

// interleave runs every microload on both versions, A B A B, --runs times
// each, writes each run's report folder and compares them.
func (f *abFlags) interleave(ctx context.Context, a, b *version, loads []probes.Microload, rules []analyzers.Rule, dir string, stderr io.Writer) (*report.AB, error) {
	before, after := map[string][]*report.RunData{}, map[string][]*report.RunData{}
	var failures []report.SideFailure
	var header []h1.Field
	if f.key != "" {
		header = append(header, h1.Field{Name: "Authorization", Value: "Bearer " + f.key})
	}
	progress := newProgressLine(stderr)
	fmt.Fprintf(stderr, "probe: %d runs of %d microload(s) on each side, interleaved: before = %s, after = %s\n", f.runs, len(loads), a.label, b.label)
	for run := 1; run <= f.runs && ctx.Err() == nil; run++ {
		for _, ml := range loads {
			for _, v := range []*version{a, b} {
				if ctx.Err() != nil {
					break
				}
				if v.broken != "" {
					continue
				}
				if err := v.ensure(ctx); err != nil {
					if ctx.Err() == nil {
						failures = append(failures, report.SideFailure{Side: v.side, Run: run, Microload: ml.Name(), Reason: v.broken})
					}
					continue
				}
				u, _ := url.Parse(v.child.URL)
				target := &probes.Target{URL: u, Header: header, Child: v.child}
				var prof *probes.ProfileOptions
				if f.profile && v.pprof {
					prof = &probes.ProfileOptions{PprofURL: u.JoinPath("/debug/pprof/"), FgprofURL: u.JoinPath("/debug/fgprof")}
				}
				progress.name = fmt.Sprintf("ab %d/%d %s %s", run, f.runs, ml.Name(), v.side)
				r, err := probes.RunLoad(ctx, ml, target, probes.LoadOptions{Concurrency: f.concurrency, Rate: f.rate,
					Duration: f.duration, Warmup: f.warmup, Timeout: f.timeout, Progress: progress.update, Profile: prof})
				progress.clear()
				if err != nil {
					if ctx.Err() == nil {
						failures = append(failures, report.SideFailure{Side: v.side, Run: run, Microload: ml.Name(), Reason: err.Error()})
					}
					continue
				}
				rep := report.FromRun(r)
				rep.AddProfiles(r, rules)
				if f.profile && !v.pprof {
					rep.Warn("no-pprof", "the "+v.side+" version serves no /debug/pprof: CPU and allocations per request come from its process figures only")
				}
				runDir := filepath.Join(dir, "runs", ml.Name(), fmt.Sprintf("%s-%d", v.side, run))
				if err := rep.WriteFolder(runDir); err != nil {
					return nil, fmt.Errorf("writing %s: %v", runDir, err)
				}
				if r.Ended != "" {
					// Partial figures would skew the medians: the run is
					// named, not counted.
					if ctx.Err() == nil {
						failures = append(failures, report.SideFailure{Side: v.side, Run: run, Microload: ml.Name(), Reason: "the run ended early: " + r.Ended})
					}
					continue
				}
				d, err := report.LoadRun(runDir)
				if err != nil {
					return nil, err
				}
				if v == a {
					before[ml.Name()] = append(before[ml.Name()], d)
				} else {
					after[ml.Name()] = append(after[ml.Name()], d)
				}
			}
		}
	}
	if len(before)+len(after) == 0 {
		if ctx.Err() != nil {
			return nil, errors.New("interrupted before anything was measured")
		}
		if len(failures) > 0 {
			return nil, fmt.Errorf("nothing was measured: %s %s", failures[0].Side, failures[0].Reason)
		}
	}
	ab := report.BuildAB(a.label, b.label, before, after, failures)
	ab.Order = "interleaved A B A B: each microload's run on the before version, then on the after version, both processes alive throughout"
	return ab, nil
}

// runCompare is `probe compare BEFORE_DIR AFTER_DIR`.
func runCompare(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print report.json on stdout and nothing else there")
	out := fs.String("out", "", "report folder (default probe-out/compare-<time>/)")
	dirs, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(dirs) != 2 {
		return usageError{"usage: probe compare BEFORE_DIR AFTER_DIR (two report folders of probe <microload> or probe all)"}
	}
	sides := [2]map[string][]*report.RunData{{}, {}}
	for i, d := range dirs {
		runs, err := report.LoadRuns(d)
		if err != nil {
			return err
		}
		for m, r := range runs {
			sides[i][m] = append(sides[i][m], r)
		}
	}
	ab := report.BuildAB(dirs[0], dirs[1], sides[0], sides[1], nil)
	if len(ab.Microloads) == 0 {
		return fmt.Errorf("the two folders have no microload in common")
	}
	return writeAndShow(ab, outDir(*out, "compare"), "report.html", *jsonOut, stdout, stderr)
}

// describe is how a version is named in the report.
func describeRef(ref, sha, dir string) string {
	if len(sha) > 12 {
		sha = sha[:12]
	}
	return fmt.Sprintf("%s (%s) of %s", ref, sha, strings.TrimSuffix(dir, "/"))
}
