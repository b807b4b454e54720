package agents

import (
	"runtime"

	"github.com/probehq/probe/lib/machine"
	"github.com/probehq/probe/result"
)

// AsRun is r as the load engine's run, for the analyzers, the
// run report's figures and --fail-on: connect is a set-up row, each tool
// an operation; the failed calls by tool and outcome are its errors.
func AsRun(r *result.Agents) *result.Run {
	run := &result.Run{Microload: "agents", Target: r.Endpoint, Mode: "closed", Concurrency: r.Agents, Clients: r.Agents,
		Start: r.Start, Duration: r.Duration, Errors: map[string]int64{}, Ended: r.Ended, CPUs: runtime.GOMAXPROCS(0),
		MachineCPUs: machine.CPUs(), MCP: r.MCP}
	for _, op := range r.All {
		run.Ops = append(run.Ops, &result.OpStats{Name: op.Name, Setup: op.Role == "", Calls: op.Calls, Errors: op.Failed(),
			Latency: op.Latency, Service: op.Latency})
		for kind, n := range op.Errors {
			if n > 0 {
				run.Errors[op.Name+": "+kind] += n
			}
		}
	}
	return run
}
