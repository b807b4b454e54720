package experiments

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
)

// ramp is `probe ramp`: scenarios (and microloads) started at an arrival
// rate that rises until the system gives way (seed 003): the knee, and
// what grew past it.
type ramp struct {
	target  shared.TargetFlags
	profile shared.ProfileFlags
	output  shared.OutputFlags

	ramp, steps string
	slo         time.Duration
	maxErrors   string
	stopWhen    []string
	maxInFlight int
	timeout     time.Duration
	maxBody     shared.ByteSize
	settle      time.Duration
}

//go:embed fixture_scenarios.json
var fixtureScenarios []byte

func RampCommand(fs *flag.FlagSet) shared.Runner {
	c := &ramp{}
	c.target.Register(fs, shared.TargetOptions{})
	c.target.RegisterHTTP2(fs)
	fs.StringVar(&c.ramp, "ramp", "", "a linear ramp of new sessions a second: FROM:TO/DURATION, like 10:500/5m")
	fs.StringVar(&c.steps, "steps", "", "steps of new sessions a second, each held for DURATION: R1,R2,…/DURATION, like 50,100,200,400/60s")
	fs.DurationVar(&c.slo, "slo", 0, "the p99 a session must keep, from its scheduled start (a window past it does not hold); 0: none")
	fs.StringVar(&c.maxErrors, "max-errors", "1%", "the share of sessions that may fail in a window that holds")
	fs.Func("stop-when", "end the ramp once: past-knee (default: two windows in a row that do not hold), never, p99_ms>N, "+
		"errors>N%, in_flight>N (repeatable)", func(s string) error {
		c.stopWhen = append(c.stopWhen, s)
		return nil
	})
	fs.IntVar(&c.maxInFlight, "max-in-flight", 10_000, "sessions at once; an arrival past it is not started and counts as failed "+
		"(bounds probe's memory and connections)")
	shared.RegisterTimeout(fs, &c.timeout, 30*time.Second, "longest wait for one request")
	shared.RegisterMaxBody(fs, &c.maxBody)
	fs.DurationVar(&c.settle, "settle", time.Minute, "with --steps: before each step after the first, wait up to this long for "+
		"the target to be as quiet as before the ramp (0: no wait; a --ramp rises without pauses)")
	c.profile.Register(fs, shared.ProfileOptions{ByDefault: true,
		Help: "profile the target along the ramp: a CPU and a wall-clock profile of each window, the " +
			"mutex and block profiles of the run", Wall: true})
	c.output.Register(fs, "ramp")
	return c.run
}

func (c *ramp) schedule() (result.Rates, error) {
	switch {
	case c.ramp != "" && c.steps != "":
		return result.Rates{}, shared.UsageError{Msg: "give --ramp or --steps, not both"}
	case c.ramp != "":
		r, err := probes.ParseRamp(c.ramp)
		if err != nil {
			return r, shared.UsageError{Msg: err.Error()}
		}
		return r, nil
	case c.steps != "":
		r, err := probes.ParseSteps(c.steps)
		if err != nil {
			return r, shared.UsageError{Msg: err.Error()}
		}
		return r, nil
	}
	return result.Rates{}, shared.UsageError{Msg: "give the arrival rates: --ramp FROM:TO/DURATION or --steps R1,R2,…/DURATION"}
}

// flows are the mix: the names given (NAME or NAME=WEIGHT), else the
// file's mix, else each scenario once.
func (c *ramp) flows(file *shared.TargetFile, names []string, fixture bool) ([]probes.Flow, error) {
	weights := map[string]float64{}
	var order []string
	for _, n := range names {
		name, w, ok := strings.Cut(n, "=")
		x := 1.0
		if ok {
			v, err := strconv.ParseFloat(w, 64)
			if err != nil || !(v > 0) || v > 1e6 {
				return nil, shared.UsageError{Msg: fmt.Sprintf("%q: want NAME or NAME=WEIGHT with a weight above 0", n)}
			}
			x = v
		}
		if _, dup := weights[name]; !dup {
			order = append(order, name)
		}
		weights[name] = x
	}
	if len(order) == 0 {
		for _, n := range slices.Sorted(maps.Keys(file.Mix)) {
			order = append(order, n)
			weights[n] = file.Mix[n]
		}
	}
	if len(order) == 0 {
		for _, sc := range file.Scenarios {
			order = append(order, sc.Name)
			weights[sc.Name] = 1
		}
	}
	if len(order) == 0 {
		return nil, shared.UsageError{Msg: "nothing to run: the target file has no scenarios; name its microloads (probe ramp NAME…)"}
	}
	var out []probes.Flow
	for _, n := range order {
		f := probes.Flow{Name: n, Weight: weights[n]}
		for _, sc := range file.Scenarios {
			if sc.Name == n {
				f.Scenario = sc
			}
		}
		for _, m := range file.Microloads {
			if m.Name == n {
				ml, err := m.Microload()
				if err != nil {
					return nil, err
				}
				f.Microload = ml
			}
		}
		if f.Scenario == nil && f.Microload == nil {
			ml, err := shared.NamedMicroload(n, fixture)
			if err != nil {
				var known []string
				for _, sc := range file.Scenarios {
					known = append(known, sc.Name)
				}
				return nil, shared.UsageError{Msg: fmt.Sprintf("%q is no scenario (%s) and no microload", n, strings.Join(known, ", "))}
			}
			f.Microload = ml
		}
		out = append(out, f)
	}
	return out, nil
}

// rampPlan is what the ramp's flags and its scenarios make of it, all
// checked before anything is claimed or started.
type rampPlan struct {
	rates  result.Rates
	stops  []pipeline.RampStop
	maxErr float64
	file   *shared.TargetFile
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
		return nil, shared.UsageError{Msg: "--stop-when " + err.Error()}
	}
	maxErr, err := parseShare(c.maxErrors)
	if err != nil {
		return nil, shared.UsageError{Msg: "--max-errors " + err.Error()}
	}
	switch {
	case c.slo < 0:
		return nil, shared.UsageError{Msg: "--slo must not be negative"}
	case c.maxInFlight < 1 || c.maxInFlight > 100_000:
		return nil, shared.UsageError{Msg: fmt.Sprintf("--max-in-flight %d: want 1 to 100,000", c.maxInFlight)}
	case shared.ValidTimeout(c.timeout) != nil:
		return nil, shared.ValidTimeout(c.timeout)
	case shared.ValidMaxBody(c.maxBody) != nil:
		return nil, shared.ValidMaxBody(c.maxBody)
	}
	file, err := shared.ReadFileFlag(ctx, &c.target, &c.profile)
	if err != nil {
		return nil, err
	}
	if file == nil {
		if c.target.Target != "" && len(names) == 0 {
			return nil, shared.UsageError{Msg: "a target by URL needs its scenarios: --file probe.jsonnet (or name microloads: probe ramp search page)"}
		}
		if file, err = shared.ParseTargetFile("the fixture's scenarios", fixtureScenarios); err != nil {
			return nil, err
		}
	}
	flows, err := c.flows(file, names, c.target.Target == "")
	if err != nil {
		return nil, err
	}
	return &rampPlan{rates: rates, stops: stops, maxErr: maxErr, file: file, flows: flows}, nil
}

// run is a session (begin … finish): a ramp that ran exits 0 whether or
// not it found a knee (a knee is a finding); one that ended early for
// another reason (the target died) exits 1, Ctrl-C 130.
func (c *ramp) run(ctx context.Context, s shared.Streams, names []string) error {
	var plan *rampPlan
	sess, err := shared.Begin(ctx, s, shared.Start{
		Checks: []error{c.target.Validate(), c.profile.Validate(), shared.CheckSettle(c.settle)},
		Before: func() (err error) { plan, err = c.plan(ctx, names); return err },
		Output: &c.output, Profile: &c.profile,
	})
	if err != nil {
		return err
	}
	tg, warnings, cleanup, err := shared.OpenTarget(ctx, &c.target, plan.file, s.Stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	profile := c.profile.Options(tg.URL, time.Minute)
	server := shared.OpenServer(ctx, tg, profile, "no CPU, memory, threads or connections per window",
		"the knee is still found; what gives way is not named")
	warnings = append(warnings, server.Warnings...)
	progress := shared.NewProgressLine(s.Stderr)
	progress.Name = "ramp"
	o := pipeline.RampOptions{Target: tg, Flows: plan.flows, Rates: plan.rates, SLO: c.slo, MaxErrors: plan.maxErr, Stop: plan.stops,
		Timeout: c.timeout, MaxBody: int(c.maxBody), MaxInFlight: c.maxInFlight, PID: server.PID, Rules: sess.Rules,
		Progress: progress.Update}
	if server.Pprof != nil {
		o.Profile = profile
	}
	if c.settle > 0 && len(plan.rates.Steps) > 1 {
		o.Settle = pipeline.NewSettler(tg, c.settle)
		o.Settle.Busy = func() {
			fmt.Fprintf(s.Stderr, "probe: the target is busy: waiting (up to --settle %s) for it to be quiet before the next step…\n", c.settle)
		}
		o.Settle.Baseline(ctx)
	}
	fmt.Fprintf(s.Stderr, "probe: %s against %s for up to %v…\n", plan.rates, tg.URL, plan.rates.Duration())
	doc, err := pipeline.Ramp(ctx, o)
	progress.Clear()
	if err != nil {
		return fmt.Errorf("target %s: %v", tg.URL, err)
	}
	doc.Warnings = append(doc.Warnings, warnings...)
	// The ramp's own end (its schedule, --stop-when) is not ctx's: ctx
	// ends only on Ctrl-C (or the caller's end), which finish makes 130.
	var failure error
	if doc.Failed() {
		failure = fmt.Errorf("the ramp ended early (%s); what was measured is in %s", doc.Ended, filepath.Join(sess.Dir, "report.md"))
	}
	return sess.Finish(doc, failure)
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
