package cli

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
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
	settle      time.Duration
}

//go:embed fixture_scenarios.json
var fixtureScenarios []byte

func rampCommand(fs *flag.FlagSet) runner {
	c := &ramp{}
	c.target.register(fs, false)
	c.target.registerHTTP2(fs)
	fs.StringVar(&c.ramp, "ramp", "", "a linear ramp of new sessions a second: FROM:TO/DURATION, like 10:500/5m")
	fs.StringVar(&c.steps, "steps", "", "steps of new sessions a second, each held for DURATION: R1,R2,…/DURATION, like 50,100,200,400/60s")
	fs.DurationVar(&c.slo, "slo", 0, "the p99 a session must keep, from its scheduled start (a window past it does not hold); 0: none")
	fs.StringVar(&c.maxErrors, "max-errors", "1%", "the share of sessions that may fail in a window that holds")
	fs.Func("stop-when", "end the ramp once: past-knee (default: two windows in a row that do not hold), never, p99_ms>N, errors>N%, in_flight>N (repeatable)", func(s string) error {
		c.stopWhen = append(c.stopWhen, s)
		return nil
	})
	fs.IntVar(&c.maxInFlight, "max-in-flight", 10_000, "sessions at once; an arrival past it is not started and counts as failed (bounds probe's memory and connections)")
	registerTimeout(fs, &c.timeout, 30*time.Second, "longest wait for one request")
	registerMaxBody(fs, &c.maxBody)
	fs.DurationVar(&c.settle, "settle", time.Minute, "with --steps: before each step after the first, wait up to this long for the target to be as quiet as before the ramp (0: no wait; a --ramp rises without pauses)")
	c.profile.registerWall(fs, true, "profile the target along the ramp: a CPU and a wall-clock profile of each window, the mutex and block profiles of the run", true)
	c.output.register(fs, "ramp")
	return c.run
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

// rampPlan is what the ramp's flags and its scenarios make of it, all
// checked before anything is claimed or started.
type rampPlan struct {
	rates  probes.Rates
	stops  []pipeline.RampStop
	maxErr float64
	file   *targetFile
	flows  []probes.Flow
}

// plan checks the ramp's own flags, then reads the scenarios (a step that
// uses a value no earlier step extracts is one line now) and picks the mix.
func (c *ramp) plan(ctx context.Context, names []string) (*rampPlan, error) {
	rates, err := c.schedule()
	if err != nil {
		return nil, err
	}
	stops, err := pipeline.RampStops(c.stopWhen)
	if err != nil {
		return nil, usageError{"--stop-when " + err.Error()}
	}
	maxErr, err := parseShare(c.maxErrors)
	if err != nil {
		return nil, usageError{"--max-errors " + err.Error()}
	}
	switch {
	case c.slo < 0:
		return nil, usageError{"--slo must not be negative"}
	case c.maxInFlight < 1 || c.maxInFlight > 100_000:
		return nil, usageError{fmt.Sprintf("--max-in-flight %d: want 1 to 100,000", c.maxInFlight)}
	case validTimeout(c.timeout) != nil:
		return nil, validTimeout(c.timeout)
	case validMaxBody(c.maxBody) != nil:
		return nil, validMaxBody(c.maxBody)
	}
	file, err := readFileFlag(ctx, &c.target, &c.profile)
	if err != nil {
		return nil, err
	}
	if file == nil {
		if c.target.target != "" && len(names) == 0 {
			return nil, usageError{"a target by URL needs its scenarios: --file probe.jsonnet (or name microloads: probe ramp search page)"}
		}
		if file, err = parseTargetFile("the fixture's scenarios", fixtureScenarios); err != nil {
			return nil, err
		}
	}
	flows, err := c.flows(file, names, c.target.target == "")
	if err != nil {
		return nil, err
	}
	return &rampPlan{rates: rates, stops: stops, maxErr: maxErr, file: file, flows: flows}, nil
}

// run is a session (begin … finish): a ramp that ran exits 0 whether or
// not it found a knee (a knee is a finding); one that ended early for
// another reason (the target died) exits 1, Ctrl-C 130.
func (c *ramp) run(ctx context.Context, s streams, names []string) error {
	var plan *rampPlan
	sess, err := begin(ctx, s, start{
		checks: []error{c.target.validate(), c.profile.validate(), checkSettle(c.settle)},
		before: func() (err error) { plan, err = c.plan(ctx, names); return err },
		output: &c.output, profile: &c.profile,
	})
	if err != nil {
		return err
	}
	target, warnings, cleanup, err := openTarget(ctx, &c.target, plan.file, s.stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	pid := 0
	if target.Child != nil {
		pid = target.Child.PID()
	} else if l, err := probes.FindListener(target.Addr()); err == nil {
		pid = l.PID
		if l.Why != "" {
			warnings = append(warnings, probes.Warning{Kind: "target-chosen", Message: l.Why})
		}
	} else {
		warnings = append(warnings, probes.Warning{Kind: "target-unseen", Message: "the target's process was not found on this machine: no CPU, memory, threads or connections per window"})
	}
	progress := newProgressLine(s.stderr)
	progress.name = "ramp"
	o := pipeline.RampOptions{Target: target, Flows: plan.flows, Rates: plan.rates, SLO: c.slo, MaxErrors: plan.maxErr, Stop: plan.stops,
		Timeout: c.timeout, MaxBody: int(c.maxBody), MaxInFlight: c.maxInFlight, PID: pid, Rules: sess.rules, Progress: progress.update}
	if c.profile.profile {
		if err := probes.CheckPprof(ctx, c.profile.options(target.URL, time.Minute).PprofURL); err != nil {
			warnings = append(warnings, probes.Warning{Kind: "no-pprof", Message: probes.NoPprof(fmt.Sprintf("no profiles: %v (the knee is still found; what gives way is not named)", err))})
		} else {
			o.Profile = c.profile.options(target.URL, time.Minute)
		}
	}
	if c.settle > 0 && len(plan.rates.Steps) > 1 {
		o.Settle = pipeline.NewSettler(target, c.settle)
		o.Settle.Busy = func() {
			fmt.Fprintf(s.stderr, "probe: the target is busy: waiting (up to --settle %s) for it to be quiet before the next step…\n", c.settle)
		}
		o.Settle.Baseline(ctx)
	}
	fmt.Fprintf(s.stderr, "probe: %s against %s for up to %v…\n", plan.rates, target.URL, plan.rates.Duration())
	doc, err := pipeline.Ramp(ctx, o)
	progress.clear()
	if err != nil {
		return fmt.Errorf("target %s: %v", target.URL, err)
	}
	doc.Warnings = append(doc.Warnings, warnings...)
	// The ramp's own end (its schedule, --stop-when) is not ctx's: ctx
	// ends only on Ctrl-C (or the caller's end), which finish makes 130.
	var failure error
	if doc.Failed() {
		failure = fmt.Errorf("the ramp ended early (%s); what was measured is in %s", doc.Ended, filepath.Join(sess.dir, "report.md"))
	}
	return sess.finish(doc, failure)
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
