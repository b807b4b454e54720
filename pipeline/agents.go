package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/probehq/probe/analyzers/contention"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/agents"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/agentsreport"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// AnalyzeAgents is probe agents' analyze step: AnalyzeRun on the agents'
// run, and the locks and waits the calls queued on (the contention
// finding, from the target's mutex and block profiles; nil: none).
func AnalyzeAgents(run *result.Run, c *result.Contention, rules []Rule) report.Analysis {
	a := AnalyzeRun(run, rules)
	if c == nil {
		return a
	}
	var callTime time.Duration
	for _, op := range run.Ops {
		if !op.Setup {
			callTime += time.Duration(op.Latency.Mean()*float64(op.Latency.TotalCount())) * time.Microsecond
		}
	}
	for _, f := range contention.Findings(c.Mutex, c.Block, callTime) {
		f.Endpoint = endpoints(run)
		a.Findings = append(a.Findings, f)
	}
	if a.Files == nil {
		a.Files = map[string][]byte{}
	}
	for name, b := range c.Raw {
		a.Files[name] = b
	}
	return a
}

// AgentsOptions are one probe agents run.
type AgentsOptions struct {
	Spec      agents.Spec
	Load      agents.Options // its Window is the pipeline's
	Target    *probes.Target
	Profile   *target.ProfileOptions // nil: not profiled
	Warnings  []result.Warning       // the target's, on the report
	Contended int                    // agents on the contended project (the report's words)
	Rules     []Rule
	// Say is told what the agents will do before they start (nil: not).
	Say func(line string)
}

// Agents runs the agents against the target, profiled when asked (and
// the target serves profiles: else a no-pprof line to Say), and makes
// the report: the run's, analysed, inside the agents' document. An
// *agents.ErrTool is a spec the target's tools refuse.
func Agents(ctx context.Context, o AgentsOptions) (*agentsreport.Agents, *report.Run, error) {
	say := func(line string) {
		if o.Say != nil {
			o.Say(line)
		}
	}
	tg, po := o.Target, o.Profile
	if po != nil {
		// Only the profiles' check: an agents run has no process figures,
		// and its no-pprof warning is said, not reported.
		server := target.Open(ctx, target.Spec{URL: tg.URL, Child: tg.Child, Pprof: po.PprofURL})
		if w, ok := server.Warning("no-pprof"); ok {
			say(w.Message)
			po = nil
		}
	}
	var profiles *result.Profiles
	var counted *result.Contention
	lo := o.Load
	if po != nil {
		lo.Window = func(ctx context.Context, d time.Duration) {
			stop := target.StartContention(ctx, *po)
			profiles = target.CaptureProfiles(ctx, *po, d)
			counted = stop()
		}
	}
	load, err := agents.Prepare(ctx, o.Spec, lo)
	if err != nil {
		return nil, nil, err
	}
	say(fmt.Sprintf("%d agents over %d project(s), %s for %s after %s warm-up; lost writes told %s…",
		lo.Agents, lo.Projects, lo.Weights, lo.Duration, lo.Warmup, load.How()))
	res, err := load.Run(ctx)
	if err != nil {
		return nil, nil, err
	}
	run := agents.AsRun(res)
	run.Profiles = profiles
	if profiles != nil {
		for _, w := range profiles.Warnings {
			run.Warn(w.Kind, w.Message)
		}
	}
	if tg.Child != nil {
		if e := tg.Child.Exit(); e != nil && res.Ended == "" {
			res.Ended, run.Ended, run.TargetExit = "target exited: "+e.Status, "target exited: "+e.Status, e
		}
	}
	for _, w := range o.Warnings {
		run.Warn(w.Kind, w.Message)
	}
	rr := report.FromRun(run, AnalyzeAgents(run, counted, o.Rules))
	return agentsreport.AgentsOf(res, o.Contended, rr), rr, nil
}
