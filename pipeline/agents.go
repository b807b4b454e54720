package pipeline

import (
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// AnalyzeAgents is probe agents' analyze step: AnalyzeRun on the agents'
// run, and the locks and waits the calls queued on (the contention
// finding, from the target's mutex and block profiles; nil: none).
func AnalyzeAgents(run *probes.Run, c *probes.Contention, rules []Rule) report.Analysis {
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
	for _, f := range analyzers.Contention(c.Mutex, c.Block, callTime) {
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
