package report

import (
	"testing"
	"time"

	"github.com/probehq/probe/probes/agents"
)

// goldenAgentsResult is a probe agents run over two projects: latencies
// known, and, when failed, a lost write, a stale item and failed calls.
func goldenAgentsResult(failed bool) *agents.Result {
	d := 10 * time.Second
	op := func(name, role string, calls int64, base int64, errs map[string]int64) *agents.Op {
		o := &agents.Op{Name: name, Role: role, Calls: calls, Errors: map[string]int64{}}
		o.Latency = newHistogramForTest()
		for i := range calls {
			o.Latency.RecordValue(base + i*base/calls*2) // base up to 3 × base µs
		}
		for k, v := range errs {
			o.Errors[k] = v
		}
		return o
	}
	project := func(name string, scale int64, errs map[string]int64) *agents.Project {
		return &agents.Project{Name: name, Ops: []*agents.Op{
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
	all := []*agents.Op{}
	for i := range p1.Ops {
		o := op(p1.Ops[i].Name, p1.Ops[i].Role, 0, 1, nil)
		for _, p := range []*agents.Project{p1, p2} {
			o.Calls += p.Ops[i].Calls
			o.Latency.Merge(p.Ops[i].Latency)
			for k, v := range p.Ops[i].Errors {
				o.Errors[k] += v
			}
		}
		all = append(all, o)
	}
	res := &agents.Result{Endpoint: "http://127.0.0.1:41001/mcp", Agents: 32, Keys: 32, Weights: agents.DefaultWeights,
		Duration: d, Projects: []*agents.Project{p1, p2}, All: all,
		Checks: agents.Checks{Versions: 4213, Items: 40, Fresh: 85 * time.Millisecond, FreshWithin: 2 * time.Second}}
	if failed {
		c := &res.Checks
		c.FailedCalls, c.Failures = 3, []string{"search: 1 jsonrpc-error", "search: 2 timeout"}
		c.Lost = []agents.Lost{{Project: "p2", Item: "07", Base: 1, Acked: 41, Final: 41, Twice: []int64{12}}}
		c.Stale = []agents.Stale{{Project: "p1", Item: "13", Word: "zqabcdefqk", Version: 38}}
	}
	return res
}

func goldenAgents(failed bool) *Agents {
	res := goldenAgentsResult(failed)
	run := res.AsRun()
	run.CPUs, run.MachineCPUs = 2, 2
	return AgentsOf(res, 20, FromRun(run, Analysis{}))
}

func TestGoldenAgents(t *testing.T) {
	a := goldenAgents(false)
	golden(t, "agents.table", table(a))
	golden(t, "agents.md", a.Markdown())
	goldenJSON(t, "agents.json", a)
	if a.Failed() || a.Says() != "checked: 4,213 versions, search index current" {
		t.Errorf("a clean run says %q (failed %v)", a.Says(), a.Failed())
	}
}

func TestGoldenAgentsFailed(t *testing.T) {
	a := goldenAgents(true)
	golden(t, "agents-failed.table", table(a))
	golden(t, "agents-failed.md", a.Markdown())
	if !a.Failed() || len(a.Checks.Failed) != 3 {
		t.Errorf("failed %v: %q", a.Failed(), a.Checks.Failed)
	}
}
