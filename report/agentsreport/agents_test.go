package agentsreport

import (
	"testing"
	"time"

	"github.com/probehq/probe/probes/agents"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/internal/reporttest"
	"github.com/probehq/probe/result"
)

// goldenAgentsResult is a probe agents run over two projects: latencies
// known, and, when failed, a lost write, a stale item and failed calls.
func goldenAgentsResult(failed bool) *result.Agents {
	d := 10 * time.Second
	op := func(name, role string, calls int64, base int64, errs map[string]int64) *result.AgentOp {
		o := &result.AgentOp{Name: name, Role: role, Calls: calls, Errors: map[string]int64{}}
		o.Latency = reporttest.NewHistogram()
		for i := range calls {
			o.Latency.RecordValue(base + i*base/calls*2) // base up to 3 × base µs
		}
		for k, v := range errs {
			o.Errors[k] = v
		}
		return o
	}
	project := func(name string, scale int64, errs map[string]int64) *result.AgentProject {
		return &result.AgentProject{Name: name, Ops: []*result.AgentOp{
			op("connect", "", 16, 18030, nil),
			op("write_note", agents.Write, 700*scale, 67840, nil),
			op("search", agents.Search, 1000*scale, 4450, errs),
			op("read_note", agents.Read, 500*scale, 1040, nil),
		}}
	}
	var errs map[string]int64
	if failed {
		errs = map[string]int64{agents.Timeout: 2, agents.JSONRPCError: 1}
	}
	p1, p2 := project("p1", 2, errs), project("p2", 1, nil)
	all := []*result.AgentOp{}
	for i := range p1.Ops {
		o := op(p1.Ops[i].Name, p1.Ops[i].Role, 0, 1, nil)
		for _, p := range []*result.AgentProject{p1, p2} {
			o.Calls += p.Ops[i].Calls
			o.Latency.Merge(p.Ops[i].Latency)
			for k, v := range p.Ops[i].Errors {
				o.Errors[k] += v
			}
		}
		all = append(all, o)
	}
	res := &result.Agents{Endpoint: "http://127.0.0.1:41001/mcp", Agents: 32, Keys: 32, Calls: agents.DefaultWeights.String(),
		Duration: d, Projects: []*result.AgentProject{p1, p2}, All: all,
		Checks: result.AgentChecks{Mode: result.AgentByVersion, Writes: 4213, Versions: 4213, Items: 40, Searched: 40,
			Fresh: 85 * time.Millisecond, FreshWithin: 2 * time.Second}}
	if failed {
		c := &res.Checks
		c.FailedCalls, c.Failures = 3, []string{"search: 1 jsonrpc-error", "search: 2 timeout"}
		c.Lost = []result.AgentLost{{Project: "p2", Item: "07", Base: 1, Acked: 41, Final: 41, Twice: []int64{12}}}
		c.Stale = []result.AgentStale{{Project: "p1", Item: "13", Word: "zqabcdefqkaaaaa", Version: 38}}
		c.Searched = 39 // the lost item is left out
	}
	return res
}

func goldenAgents(failed bool) *Agents {
	res := goldenAgentsResult(failed)
	run := agents.AsRun(res)
	run.CPUs, run.MachineCPUs = 2, 2
	return AgentsOf(res, 20, report.FromRun(run, report.Analysis{}))
}

func TestGoldenAgents(t *testing.T) {
	a := goldenAgents(false)
	reporttest.Golden(t, "agents.table", reporttest.Table(a))
	reporttest.Golden(t, "agents.md", a.Markdown())
	reporttest.GoldenJSON(t, "agents.json", a)
	if a.Failed() || a.Says() != "checked: 4,213 writes by version, none lost; search found every item's last word" {
		t.Errorf("a clean run says %q (failed %v)", a.Says(), a.Failed())
	}
}

func TestGoldenAgentsFailed(t *testing.T) {
	a := goldenAgents(true)
	reporttest.Golden(t, "agents-failed.table", reporttest.Table(a))
	reporttest.Golden(t, "agents-failed.md", a.Markdown())
	if !a.Failed() || len(a.Checks.Failed) != 3 {
		t.Errorf("failed %v: %q", a.Failed(), a.Checks.Failed)
	}
	want := "checked: 4,213 writes by version: 3 failed calls, 1 item with lost writes, 1 item not searched (a lost write), " +
		"search did not find the last word of 1 of 39 items within 2s"
	if a.Says() != want {
		t.Errorf("says %q\nwant %q", a.Says(), want)
	}
}

// A run read back says so, and report.json names the mode.
func TestAgentsReadBackSays(t *testing.T) {
	res := goldenAgentsResult(false)
	res.Checks.Mode, res.Checks.Keeps, res.Checks.Versions, res.Checks.ReadBack = result.AgentReadBack, result.AgentEveryWrite, 0, 4200
	a := AgentsOf(res, 20, nil)
	if a.Says() != "checked: 4,213 writes read back (every write kept), none lost; search found every item's last word" ||
		a.Checks.Mode != "read-back" || a.Checks.ReadBack != 4200 {
		t.Errorf("says %q, checks %+v", a.Says(), a.Checks)
	}
}
