package pipeline

import (
	"context"
	"sync"

	"github.com/probehq/probe/report/wsreport"
	"github.com/probehq/probe/result"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/contention"
	"github.com/probehq/probe/analyzers/fanout"
	"github.com/probehq/probe/probes/ws"
	"github.com/probehq/probe/report"
)

// WSOptions are one WebSocket fan-out (`probe ws`).
type WSOptions struct {
	Load   ws.Options
	Target string // as the report names it
	Mode   string // the fixture's mode, when probe started it
	Config wsreport.WSConfig
	PID    int
	Rules  []Rule
	// Mix, when set, is a load run alongside once the connections are
	// ready (probe ws --mix): its own report, in the fan-out's.
	Mix func(ctx context.Context) (*report.Run, error)
	// NoExperiment skips the per-delivery experiment a profiled run
	// ends with (ws_experiment.go).
	NoExperiment bool
}

// WS runs the fan-out, the mix beside it, and the analyzers on what the
// target's profiles saw: each round's CPU by work, the own code that took
// it, and the locks the publishes waited on (contention, against the time
// the publishes took).
func WS(ctx context.Context, o WSOptions) (*wsreport.WS, error) {
	var mix *report.Run
	var mixErr error
	var wg sync.WaitGroup
	if o.Mix != nil {
		o.Load.OnReady = func() {
			wg.Go(func() { mix, mixErr = o.Mix(ctx) })
		}
	}
	o.Load.Experiment = o.Load.Profile != nil && !o.NoExperiment
	res, err := ws.Run(ctx, o.Load)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	var a wsreport.WSAnalysis
	var cpus []*profile.Profile
	for _, rd := range res.Rounds {
		var top, own []analyzers.ShareOfWork
		if rd.CPU != nil {
			cpus = append(cpus, rd.CPU)
			if tl := analyzers.Timeline([]*profile.Profile{rd.CPU}, o.Rules); len(tl) > 0 {
				top = tl[0].Top
			}
			own = fanout.OwnTop(rd.CPU, 3, o.Rules, res.MainModule)
		}
		a.Tops = append(a.Tops, top)
		a.OwnTops = append(a.OwnTops, own)
	}
	if len(cpus) > 0 {
		if merged, err := profile.Merge(cpus); err == nil {
			r := analyzers.Analyze(merged, nil, analyzers.Evidence{MainModule: res.MainModule}, o.Rules)
			a.Findings, a.Unexplained = r.Findings, r.Unexplained
		}
	}
	a.Findings = append(a.Findings, contention.Findings(res.Mutex, res.Block, res.PublishTime)...)
	if res.Experiment != nil {
		var found []analyzers.Finding
		a.Experiment, found = wsExperiment(res.Experiment, o.Rules, res.MainModule)
		crossReference(a.Findings, found)
		a.Findings = append(a.Findings, found...)
	}
	doc := wsreport.WSOf(res, o.Target, o.Mode, o.Config, a, o.PID)
	doc.Mix = mix
	if mixErr != nil {
		doc.Warnings = append(doc.Warnings, result.Warning{Kind: "mix", Message: "the load alongside did not run: " + mixErr.Error()})
	}
	return doc, nil
}
