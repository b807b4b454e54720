package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"probe/analyzers/report"
	"probe/probes"
)

// loadCommand is `probe <microload>`, `probe all` and `probe http`.
type loadCommand struct {
	name    string
	target  targetFlags
	load    loadFlags
	profile profileFlags
	output  outputFlags
	request requestFlags // probe http
}

func microloadCommand(name string) func(fs *flag.FlagSet) runner {
	return func(fs *flag.FlagSet) runner { return newLoadCommand(fs, name) }
}

func allCommand(fs *flag.FlagSet) runner  { return newLoadCommand(fs, "all") }
func httpCommand(fs *flag.FlagSet) runner { return newLoadCommand(fs, "http") }

func newLoadCommand(fs *flag.FlagSet, name string) runner {
	c := &loadCommand{name: name}
	c.target.register(fs, false)
	c.load.register(fs, loadDefaults{duration: 10 * time.Second, warmup: 2 * time.Second, timeout: 30 * time.Second, concurrency: 32})
	c.profile.register(fs, false, "profile the target while the load runs, and name the per-request work that could move to load time")
	c.output.register(fs, name)
	if name == "http" {
		c.request.register(fs, "path and query to request, e.g. /api/items?page=1", "request body", "GET", true)
	}
	return c.run
}

// failedChecks: the run completed but replies failed their checks, or it
// ended early.
type failedChecks struct {
	requests, errors int64
	ended, dir       string
}

func (e failedChecks) Error() string {
	if e.ended != "" {
		return fmt.Sprintf("the run ended early (%s); what was measured is in %s", e.ended, e.dir)
	}
	return fmt.Sprintf("%d of %d requests failed their checks; see %s", e.errors, e.requests, filepath.Join(e.dir, "report.md"))
}

func (c *loadCommand) run(ctx context.Context, s streams, words []string) error {
	if err := noWords(c.name, words); err != nil {
		return err
	}
	for _, err := range []error{c.target.validate(), c.load.validate(), c.profile.validate()} {
		if err != nil {
			return err
		}
	}
	loads, err := c.microloads()
	if err != nil {
		return err
	}
	rules, err := c.profile.loadRules()
	if err != nil {
		return err
	}
	target, warnings, cleanup, err := openTarget(ctx, &c.target, s.stderr)
	if err != nil {
		return err
	}
	defer cleanup()

	p := newPipeline(rules, newProgressLine(s.stderr))
	o := c.load.options()
	o.Profile = c.profile.options(target.URL, c.load.duration)
	var reports []*report.Report
	for _, ml := range loads {
		if ctx.Err() != nil {
			break
		}
		rep, run, err := p.measure(ctx, ml.Name(), ml, target, o)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("target %s: %v", target.URL, err)
		}
		for _, w := range warnings {
			rep.Warn(w.Kind, w.Message)
		}
		reports = append(reports, rep)
		if run.Ended != "" && !errors.Is(ctx.Err(), context.Canceled) {
			break // the target died: the next microload has nothing to load
		}
	}
	if len(reports) == 0 {
		return errors.New("interrupted before anything was measured")
	}
	var doc report.Document = reports[0]
	failed := reports[0].Failed()
	requests, errs, ended := reports[0].Latency.Requests, reports[0].Latency.Errors, reports[0].Ended
	if c.name == "all" {
		suite := report.NewSuite(target.URL.String(), reports)
		doc, failed = suite, suite.Failed()
		requests, errs, ended = suite.Latency.Requests, suite.Latency.Errors, suite.Ended
	}
	dir := outDir(c.output.out, c.name)
	if err := writeAndShow(doc, dir, c.output.json, s); err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return interruptedError{dir}
	case failed:
		return failedChecks{requests: requests, errors: errs, ended: ended, dir: dir}
	}
	return nil
}

// microloads are the command's: one by name, every one for all, or the
// request of probe http.
func (c *loadCommand) microloads() ([]probes.Microload, error) {
	switch c.name {
	case "all":
		var out []probes.Microload
		for _, n := range fixtureMicroloads {
			ml, err := namedMicroload(n)
			if err != nil {
				return nil, err
			}
			out = append(out, ml)
		}
		return out, nil
	case "http":
		ml, err := c.request.httpMicroload()
		if err != nil {
			return nil, err
		}
		return []probes.Microload{ml}, nil
	}
	ml, err := namedMicroload(c.name)
	if err != nil {
		return nil, err
	}
	return []probes.Microload{ml}, nil
}

// namedMicroload is a fresh microload of that name with its defaults.
func namedMicroload(name string) (probes.Microload, error) {
	switch name {
	case "toolslist":
		return probes.ToolsList{Path: "/mcp"}, nil
	case "sitemap":
		return probes.Sitemap{}, nil
	case "page":
		return &probes.Page{}, nil
	case "feed":
		return &probes.Feed{}, nil
	case "search":
		return &probes.Search{}, nil
	case "notequery":
		return probes.NoteQuery{Path: fixtureQueryPath, Queries: fixtureNoteQueries}, nil
	}
	return nil, usageError{fmt.Sprintf("unknown microload %q (toolslist sitemap search notequery feed page http)", name)}
}

// openTarget parses --target, or starts the fixture as a child process.
func openTarget(ctx context.Context, f *targetFlags, stderr io.Writer) (*probes.Target, []probes.Warning, func(), error) {
	var warnings []probes.Warning
	if f.target != "" {
		u, err := parseTarget(f.target)
		if err != nil {
			return nil, nil, nil, err
		}
		if f.pin {
			warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin places only a fixture that probe starts"})
		}
		return &probes.Target{URL: u, Header: f.header()}, warnings, func() {}, nil
	}
	fmt.Fprintf(stderr, "probe: starting the fixture (%s mode, %d notes)…\n", f.fixtureMode, f.notes)
	child, err := startFixture(ctx, fixtureStart{mode: f.fixtureMode, notes: f.notes, synthetic: f.synthetic, key: f.key})
	if err != nil {
		return nil, nil, nil, err
	}
	u, _ := parseTarget(child.URL)
	if f.pin {
		ok, err := probes.Pin(child.PID())
		switch {
		case err != nil:
			warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin: " + err.Error()})
		case !ok:
			warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin needs two or more CPUs"})
		}
	}
	return &probes.Target{URL: u, Header: f.header(), Child: child}, warnings, func() { child.Stop() }, nil
}
