package cli

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// ramp is `probe ramp`: scenarios (and microloads) started at an arrival
// rate that rises until the system gives way (seed 003): the knee, and
// what grew past it.
type ramp struct {
	target  targetFlags
	profile profileFlags
	output  outputFlags

	ramp, steps string
	slo         time.Duration
	maxErrors   string
	stopWhen    []string
	maxInFlight int
	timeout     time.Duration
	maxBody     byteSize
}

//go:embed fixture_scenarios.json
var fixtureScenarios []byte

func rampCommand(fs *flag.FlagSet) runner {
	c := &ramp{}
	c.target.register(fs, false)
	fs.StringVar(&c.ramp, "ramp", "", "a linear ramp of new sessions a second: FROM:TO/DURATION, like 10:500/5m")
	fs.StringVar(&c.steps, "steps", "", "steps of new sessions a second, each held for DURATION: R1,R2,…/DURATION, like 50,100,200,400/60s")
	fs.DurationVar(&c.slo, "slo", 0, "the p99 a session must keep, from its scheduled start (a window past it does not hold); 0: none")
	fs.StringVar(&c.maxErrors, "max-errors", "1%", "the share of sessions that may fail in a window that holds")
	fs.Func("stop-when", "end the ramp once: past-knee (default: two windows in a row that do not hold), never, p99_ms>N, errors>N%, in_flight>N (repeatable)", func(s string) error {
		c.stopWhen = append(c.stopWhen, s)
		return nil
	})
	fs.IntVar(&c.maxInFlight, "max-in-flight", 10_000, "sessions at once; an arrival past it is not started and counts as failed (bounds probe's memory and connections)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "longest wait for one request")
	c.maxBody = byteSize(64 << 20)
	fs.Var(&c.maxBody, "max-body", "largest reply body, as received and as decoded")
	c.profile.register(fs, true, "profile the target along the ramp: a CPU and a wall-clock profile of each window, the mutex and block profiles of the run")
	c.output.register(fs, "ramp")
	return c.run
}

// stopRule is one --stop-when.
type stopRule struct {
	metric string // past-knee, never, p99_ms, errors, in_flight
	limit  float64
}

var stopRE = regexp.MustCompile(`^(p99_ms|errors|in_flight)\s*>\s*([0-9.]+)(%?)$`)

func parseStopWhen(list []string) ([]stopRule, error) {
	if len(list) == 0 {
		return []stopRule{{metric: "past-knee"}}, nil
	}
	var out []stopRule
	for _, s := range list {
		s = strings.TrimSpace(s)
		switch s {
		case "past-knee", "never":
			out = append(out, stopRule{metric: s})
			continue
		}
		m := stopRE.FindStringSubmatch(s)
		if m == nil {
			return nil, usageError{fmt.Sprintf("--stop-when %q: want past-knee, never, p99_ms>N, errors>N%% or in_flight>N", s)}
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		if m[3] == "%" {
			v /= 100
		}
		out = append(out, stopRule{metric: m[1], limit: v})
	}
	return out, nil
}

// stop is the ArrivalLoad's Stop: the first rule the windows so far break.
func stopFunc(rules []stopRule, knee stats.KneeRule) func([]probes.WindowStats) string {
	return func(ws []probes.WindowStats) string {
		steps := report.LoadSteps(ws)
		last := steps[len(steps)-1]
		w := ws[len(ws)-1]
		for _, r := range rules {
			switch r.metric {
			case "past-knee":
				if k := stats.FindKnee(steps, knee); k.Found && k.Past+1 < len(steps) {
					return fmt.Sprintf("stopped: past the knee (windows %d and %d did not hold)", k.Past+1, k.Past+2)
				}
			case "p99_ms":
				if last.P99 > r.limit {
					return fmt.Sprintf("stopped: p99 %.0f ms > %g (--stop-when)", last.P99, r.limit)
				}
			case "errors":
				if last.Errors > r.limit {
					return fmt.Sprintf("stopped: %.1f%% of sessions failed (--stop-when)", 100*last.Errors)
				}
			case "in_flight":
				if float64(w.InFlightMax) > r.limit {
					return fmt.Sprintf("stopped: %d sessions in flight (--stop-when)", w.InFlightMax)
				}
			}
		}
		return ""
	}
}

func (c *ramp) schedule() (probes.Rates, error) {
	switch {
	case c.ramp != "" && c.steps != "":
		return probes.Rates{}, usageError{"give --ramp or --steps, not both"}
	case c.ramp != "":
		r, err := probes.ParseRamp(c.ramp)
		if err != nil {
			return r, usageError{err.Error()}
		}
		return r, nil
	case c.steps != "":
		r, err := probes.ParseSteps(c.steps)
		if err != nil {
			return r, usageError{err.Error()}
		}
		return r, nil
	}
	return probes.Rates{}, usageError{"give the arrival rates: --ramp FROM:TO/DURATION or --steps R1,R2,…/DURATION"}
}

// flows are the mix: the names given (NAME or NAME=WEIGHT), else the
// file's mix, else each scenario once.
func (c *ramp) flows(file *targetFile, names []string, fixture bool) ([]probes.Flow, error) {
	weights := map[string]float64{}
	var order []string
	for _, n := range names {
		name, w, ok := strings.Cut(n, "=")
		x := 1.0
		if ok {
			v, err := strconv.ParseFloat(w, 64)
			if err != nil || !(v > 0) || v > 1e6 {
				return nil, usageError{fmt.Sprintf("%q: want NAME or NAME=WEIGHT with a weight above 0", n)}
			}
			x = v
		}
		if _, dup := weights[name]; !dup {
			order = append(order, name)
		}
		weights[name] = x
	}
	if len(order) == 0 {
		for _, n := range sortedNames(anyMap(file.mix)) {
			order = append(order, n)
			weights[n] = file.mix[n]
		}
	}
	if len(order) == 0 {
		for _, sc := range file.scenarios {
			order = append(order, sc.Name)
			weights[sc.Name] = 1
		}
	}
	if len(order) == 0 {
		return nil, usageError{"nothing to run: the target file has no scenarios; name its microloads (probe ramp NAME…)"}
	}
	var out []probes.Flow
	for _, n := range order {
		f := probes.Flow{Name: n, Weight: weights[n]}
		for _, sc := range file.scenarios {
			if sc.Name == n {
				f.Scenario = sc
			}
		}
		for _, m := range file.microloads {
			if m.name == n {
				ml, err := m.microload()
				if err != nil {
					return nil, err
				}
				f.Microload = ml
			}
		}
		if f.Scenario == nil && f.Microload == nil {
			ml, err := namedMicroload(n, fixture)
			if err != nil {
				var known []string
				for _, sc := range file.scenarios {
					known = append(known, sc.Name)
				}
				return nil, usageError{fmt.Sprintf("%q is no scenario (%s) and no microload", n, strings.Join(known, ", "))}
			}
			f.Microload = ml
		}
		out = append(out, f)
	}
	return out, nil
}

func anyMap(m map[string]float64) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (c *ramp) run(ctx context.Context, s streams, names []string) error {
	for _, err := range []error{c.target.validate(), c.profile.validate()} {
		if err != nil {
			return err
		}
	}
	rates, err := c.schedule()
	if err != nil {
		return err
	}
	stops, err := parseStopWhen(c.stopWhen)
	if err != nil {
		return err
	}
	maxErr, err := parseShare(c.maxErrors)
	if err != nil {
		return usageError{"--max-errors " + err.Error()}
	}
	switch {
	case c.slo < 0:
		return usageError{"--slo must not be negative"}
	case c.maxInFlight < 1 || c.maxInFlight > 100_000:
		return usageError{fmt.Sprintf("--max-in-flight %d: want 1 to 100,000", c.maxInFlight)}
	case c.timeout <= 0 || c.timeout > time.Hour:
		return usageError{fmt.Sprintf("--timeout %v: want more than 0 and at most 1h", c.timeout)}
	case c.maxBody < minMaxBody:
		return usageError{"--max-body: want at least 1 KiB"}
	}
	// The scenarios are read and checked before anything starts: a step
	// that uses a value no earlier step extracts is one line now.
	var file *targetFile
	if c.target.file != "" {
		if file, err = readTargetFile(ctx, c.target.file); err != nil {
			return err
		}
		if c.target.target == "" && file.target != "" {
			c.target.target = file.target
		}
		if c.profile.pprof == "" {
			c.profile.pprof = file.pprof
		}
	} else {
		if c.target.target != "" && len(names) == 0 {
			return usageError{"a target by URL needs its scenarios: --file probe.jsonnet (or name microloads: probe ramp search page)"}
		}
		if file, err = parseTargetFile("the fixture's scenarios", fixtureScenarios); err != nil {
			return err
		}
	}
	flows, err := c.flows(file, names, c.target.target == "")
	if err != nil {
		return err
	}
	dir, err := c.output.claim()
	if err != nil {
		return err
	}
	rules, err := c.profile.loadRules(ctx)
	if err != nil {
		return err
	}
	target, warnings, cleanup, err := openTarget(ctx, &c.target, s.stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	target.Header = append(append(target.Header[:0:0], file.headers...), target.Header...)
	// An unreachable target is an error, not a knee below the first rate.
	if conn, err := net.DialTimeout("tcp", target.Addr(), 5*time.Second); err != nil {
		return fmt.Errorf("target %s is unreachable: %v", target.URL, err)
	} else {
		conn.Close()
	}
	pid := 0
	if target.Child != nil {
		pid = target.Child.PID()
	} else if p, err := probes.ListenerPID(target.Addr()); err == nil {
		pid = p
	} else {
		warnings = append(warnings, probes.Warning{Kind: "target-unseen", Message: "the target's process was not found on this machine: no CPU, memory, threads or connections per window"})
	}
	knee := stats.KneeRule{SLO: float64(c.slo.Microseconds()) / 1000, MaxErrors: maxErr}
	progress := newProgressLine(s.stderr)
	progress.name = "ramp"
	load := &probes.ArrivalLoad{Target: target, Mix: flows, Rates: rates, Timeout: c.timeout, MaxBody: int(c.maxBody),
		MaxInFlight: c.maxInFlight, PID: pid, Stop: stopFunc(stops, knee), Progress: progress.update}
	if c.profile.profile {
		if err := probes.CheckPprof(ctx, c.profile.options(target.URL, time.Minute).PprofURL); err != nil {
			warnings = append(warnings, probes.Warning{Kind: "no-pprof", Message: fmt.Sprintf("no profiles: %v (the knee is still found; what gives way is not named)", err)})
		} else {
			load.Profile = c.profile.options(target.URL, time.Minute)
		}
	}
	fmt.Fprintf(s.stderr, "probe: %s against %s for up to %v…\n", rates, target.URL, rates.Duration())
	run, err := load.Run(ctx)
	progress.clear()
	if err != nil {
		return fmt.Errorf("target %s: %v", target.URL, err)
	}
	cfg := report.RampConfig{Target: target.URL.String(), Schedule: rates, Rule: knee, Cores: probes.CPUsOf(pid)}
	for _, f := range flows {
		kind := "scenario"
		if f.Scenario == nil {
			kind = "microload"
		}
		cfg.Flows = append(cfg.Flows, report.RampFlow{Name: f.Name, Kind: kind, Weight: f.Weight, Steps: f.Steps()})
	}
	doc := report.RampOf(run, cfg, analyzeRamp(run, knee, rules))
	doc.Warnings = append(doc.Warnings, warnings...)
	if err := writeAndShow(doc, dir, c.output.json, s); err != nil {
		return err
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return interruptedError{dir}
	case doc.Failed():
		return fmt.Errorf("the ramp ended early (%s); what was measured is in %s", doc.Ended, filepath.Join(dir, "report.md"))
	}
	return nil
}

// analyzeRamp is what the analyzers make of a ramp: the knee, each
// window's CPU by work, what requests waited on past the knee (fgprof),
// and the locks and waits that held them (mutex and block profiles, set
// against the time all the sessions took).
func analyzeRamp(run *probes.ArrivalRun, rule stats.KneeRule, rules []analyzers.Rule) report.RampAnalysis {
	a := report.RampAnalysis{Knee: stats.FindKnee(report.LoadSteps(run.Windows), rule)}
	var sessionTime time.Duration
	for _, w := range run.Windows {
		var top []analyzers.ShareOfWork
		if w.CPU != nil {
			if tl := analyzers.Timeline([]*profile.Profile{w.CPU}, rules); len(tl) > 0 {
				top = tl[0].Top
			}
		}
		a.Tops = append(a.Tops, top)
		sessionTime += time.Duration(w.Latency.Mean()*float64(w.Latency.TotalCount())) * time.Microsecond
	}
	var walls []*profile.Profile
	for _, w := range report.PastWindows(run.Windows, a.Knee) {
		if w.Wall != nil {
			walls = append(walls, w.Wall)
		}
	}
	if len(walls) > 0 {
		if merged, err := profile.Merge(walls); err == nil {
			a.WallStates = analyzers.WallStates(merged)
		}
	}
	a.Findings = analyzers.Contention(run.Mutex, run.Block, sessionTime)
	return a
}

// parseShare reads "1%" or "0.01".
func parseShare(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || v < 0 || v > 1 {
		return 0, fmt.Errorf("%q: want a share such as 1%% or 0.01", s)
	}
	return v, nil
}
