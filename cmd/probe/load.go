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

	"probe/analyzers/report"
	"probe/fixtures"
	"probe/probes"
	"probe/probes/h1"
)

// loadFlags are the common flags of the microload commands (DESIGN.md).
type loadFlags struct {
	target, pprof, out, fixtureMode, key, rules string
	profile, json, synthetic, pin, wall         bool
	duration, warmup, timeout                   time.Duration
	concurrency, notes                          int
	rate                                        float64
	// probe http
	path, method, body, param string
	headers                   []string
}

func (f *loadFlags) register(fs *flag.FlagSet, withHTTP bool) {
	fs.StringVar(&f.target, "target", "", "URL of the server to load (default: start the reference fixture as a child process)")
	fs.StringVar(&f.pprof, "pprof", "", "URL of the target's /debug/pprof/ (default: TARGET/debug/pprof/)")
	fs.BoolVar(&f.profile, "profile", false, "profile the target while the load runs, and name the per-request work that could move to load time")
	fs.StringVar(&f.rules, "rules", "", "more analyzer rules, a JSON or Jsonnet file (see analyzers/rules.json)")
	fs.BoolVar(&f.wall, "wall", true, "with --profile: also take fgprof's wall-clock profile (the costliest part of profiling)")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "measured time per microload")
	fs.DurationVar(&f.warmup, "warmup", 2*time.Second, "load before the measured time, not recorded")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "longest wait for one reply")
	fs.IntVar(&f.concurrency, "concurrency", 32, "virtual clients, one kept-alive connection each")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: requests per second (latency from the intended send time)")
	fs.StringVar(&f.out, "out", "", "report folder (default probe-out/<name>-<time>/)")
	fs.BoolVar(&f.json, "json", false, "print report.json on stdout and nothing else there")
	fs.StringVar(&f.fixtureMode, "fixture-mode", "per-request", "mode of the started fixture: per-request or load-time")
	fs.IntVar(&f.notes, "notes", 2000, "notes in the started fixture's vault")
	fs.BoolVar(&f.synthetic, "synthetic", false, "the started fixture uses 500-byte notes")
	fs.BoolVar(&f.pin, "pin", false, "put the started fixture and probe on different CPUs")
	fs.StringVar(&f.key, "key", "", "send Authorization: Bearer KEY (the fixture's keyed class sees private notes)")
	if withHTTP {
		fs.StringVar(&f.path, "path", "", "path and query to request, e.g. /api/items?page=1")
		fs.StringVar(&f.method, "method", "GET", "HTTP method")
		fs.StringVar(&f.body, "body", "", "request body")
		fs.StringVar(&f.param, "param", "", "vary a query parameter: name=v1,v2,…")
		fs.Func("header", "request header Name:value (repeatable)", func(s string) error {
			f.headers = append(f.headers, s)
			return nil
		})
	}
}

func (f *loadFlags) validate() error {
	switch {
	case f.duration <= 0:
		return usageError{"--duration must be positive"}
	case f.warmup < 0:
		return usageError{"--warmup must not be negative"}
	case f.concurrency <= 0:
		return usageError{"--concurrency must be positive"}
	case f.rate < 0:
		return usageError{"--rate must not be negative"}
	case f.timeout <= 0:
		return usageError{"--timeout must be positive"}
	case f.notes <= 0:
		return usageError{"--notes must be positive"}
	case f.fixtureMode != "per-request" && f.fixtureMode != "load-time":
		return usageError{fmt.Sprintf("--fixture-mode %q: want per-request or load-time", f.fixtureMode)}
	}
	if f.pprof != "" {
		if u, err := url.Parse(f.pprof); err != nil || u.Host == "" {
			return usageError{fmt.Sprintf("--pprof %q is not a URL", f.pprof)}
		}
	}
	return nil
}

// interruptedError: Ctrl-C ended the run; what was measured is written.
type interruptedError struct{ dir string }

func (e interruptedError) Error() string {
	return "interrupted: what was measured is in " + e.dir
}

// failedChecks: the run completed but replies failed their checks, or it ended early.
type failedChecks struct {
	r   *report.Report
	dir string
}

func (e failedChecks) Error() string {
	if e.r.Ended != "" {
		return fmt.Sprintf("the run ended early (%s); what was measured is in %s", e.r.Ended, e.dir)
	}
	return fmt.Sprintf("%d of %d requests failed their checks; see %s", e.r.Latency.Errors, e.r.Latency.Requests, filepath.Join(e.dir, "report.md"))
}

// runLoad is `probe <microload>`, `probe all` and `probe http`.
func runLoad(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f loadFlags
	f.register(fs, name == "http")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s: unexpected argument %q", name, fs.Arg(0))}
	}
	if err := f.validate(); err != nil {
		return err
	}
	loads, err := microloads(name, &f)
	if err != nil {
		return err
	}
	rules, err := rulesOf(f.rules)
	if err != nil {
		return err
	}

	target, warnings, cleanup, err := f.openTarget(ctx, stderr)
	if err != nil {
		return err
	}
	defer cleanup()

	profiling, err := f.profileOptions(target)
	if err != nil {
		return err
	}
	progress := newProgressLine(stderr)
	var reports []*report.Report
	for _, ml := range loads {
		if ctx.Err() != nil {
			break
		}
		progress.name = ml.Name()
		run, err := probes.RunLoad(ctx, ml, target, probes.LoadOptions{Concurrency: f.concurrency, Rate: f.rate,
			Duration: f.duration, Warmup: f.warmup, Timeout: f.timeout, Progress: progress.update, Profile: profiling})
		progress.clear()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("target %s: %v", target.URL, err)
		}
		for _, w := range warnings {
			run.Warn(w.Kind, w.Message)
		}
		rep := report.FromRun(run)
		rep.AddProfiles(run, rules)
		reports = append(reports, rep)
		if run.Ended != "" && !errors.Is(ctx.Err(), context.Canceled) {
			break // the target died: the next microload has nothing to load
		}
	}
	if len(reports) == 0 {
		return errors.New("interrupted before anything was measured")
	}
	rep := reports[0]
	if name == "all" {
		rep = report.Combine(target.URL.String(), reports)
	}
	dir := outDir(f.out, name)
	if err := writeAndShow(rep, dir, "report.md", f.json, stdout, stderr); err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return interruptedError{dir}
	case rep.Failed():
		return failedChecks{rep, dir}
	}
	return nil
}

func microloads(name string, f *loadFlags) ([]probes.Microload, error) {
	switch name {
	case "all":
		return probes.FixtureMicroloads(), nil
	case "http":
		if f.path == "" {
			return nil, usageError{"http: --path is required"}
		}
		l := &probes.HTTP{Method: strings.ToUpper(f.method), Path: f.path}
		if f.body != "" {
			l.Body = []byte(f.body)
		}
		for _, h := range f.headers {
			field, err := probes.ParseHeader(h)
			if err != nil {
				return nil, usageError{err.Error()}
			}
			l.Header = append(l.Header, field)
		}
		if f.param != "" {
			var err error
			if l.Param, l.Values, err = probes.ParseParam(f.param); err != nil {
				return nil, usageError{err.Error()}
			}
		}
		if !strings.HasPrefix(l.Path, "/") {
			return nil, usageError{fmt.Sprintf("--path %q must start with /", l.Path)}
		}
		return []probes.Microload{l}, nil
	}
	ml, ok := probes.MicroloadByName(name)
	if !ok {
		return nil, usageError{fmt.Sprintf("unknown microload %q", name)}
	}
	return []probes.Microload{ml}, nil
}

// openTarget parses --target, or starts the fixture as a child process.
func (f *loadFlags) openTarget(ctx context.Context, stderr io.Writer) (*probes.Target, []probes.Warning, func(), error) {
	var warnings []probes.Warning
	var header []h1.Field
	if f.key != "" {
		header = append(header, h1.Field{Name: "Authorization", Value: "Bearer " + f.key})
	}
	if f.target != "" {
		u, err := url.Parse(f.target)
		if err != nil || u.Host == "" {
			return nil, nil, nil, usageError{fmt.Sprintf("--target %q is not a URL like http://127.0.0.1:8080", f.target)}
		}
		if u.Scheme != "http" {
			return nil, nil, nil, usageError{fmt.Sprintf("--target %q: only http:// targets can be loaded", f.target)}
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		if f.pin {
			warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin places only a fixture that probe starts"})
		}
		return &probes.Target{URL: u, Header: header}, warnings, func() {}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(stderr, "probe: starting the fixture (%s mode, %d notes)…\n", f.fixtureMode, f.notes)
	key := f.key
	if key == "" {
		key = fixtures.DefaultKey
	}
	child, err := probes.StartFixture(ctx, probes.FixtureOptions{Executable: exe, Mode: f.fixtureMode, Notes: f.notes, Synthetic: f.synthetic, Key: key})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("fixture: %v", err)
	}
	u, _ := url.Parse(child.URL)
	if f.pin {
		ok, err := probes.Pin(child.PID())
		switch {
		case err != nil:
			warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin: " + err.Error()})
		case !ok:
			warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin needs two or more CPUs"})
		}
	}
	return &probes.Target{URL: u, Header: header, Child: child}, warnings, func() { child.Stop() }, nil
}

// profileOptions says where the target's profiles are, for --profile.
func (f *loadFlags) profileOptions(t *probes.Target) (*probes.ProfileOptions, error) {
	if !f.profile {
		return nil, nil
	}
	o := &probes.ProfileOptions{PprofURL: t.URL.JoinPath("/debug/pprof/"), FgprofURL: t.URL.JoinPath("/debug/fgprof")}
	if f.pprof != "" {
		u, _ := url.Parse(f.pprof) // checked by validate
		if !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
		}
		o.PprofURL = u
		o.FgprofURL = u.JoinPath("../fgprof")
	}
	if !f.wall {
		o.FgprofURL = nil
	}
	// Windows short enough to show change, long enough to hold samples.
	o.Window = min(5*time.Second, max(time.Second, f.duration/2))
	return o, nil
}

// progressLine is the live line on stderr: elapsed, requests, errors, rps.
type progressLine struct {
	w    io.Writer
	tty  bool
	name string
	last time.Time
}

func newProgressLine(w io.Writer) *progressLine {
	p := &progressLine{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progressLine) update(pr probes.Progress) {
	phase := ""
	if pr.Warmup {
		phase = " (warm-up)"
	}
	p.show(fmt.Sprintf("%s %5.1fs%s  requests %d  errors %d  rps %.0f", p.name, pr.Elapsed.Seconds(), phase, pr.Requests, pr.Errors, pr.RPS))
}

// show replaces the live line (a terminal) or logs it now and then.
func (p *progressLine) show(line string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	if time.Since(p.last) >= 5*time.Second { // a log, not a terminal: a line now and then
		fmt.Fprintln(p.w, line)
		p.last = time.Now()
	}
}

func (p *progressLine) clear() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
