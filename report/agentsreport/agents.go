// Package agentsreport is probe agents's report: the agents' operations and
// the checks of their writes and search.
package agentsreport

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"

	"github.com/dustin/go-humanize"
)

// Agents is probe agents' report: the seed's table per project and in
// all (connect, then each tool), the checks after the run, and the run
// report of the same figures (the analyzers' findings, --fail-on's
// figures, the profiles).
type Agents struct {
	Endpoint  string        `json:"endpoint"`
	Agents    int           `json:"agents"`
	Keys      int           `json:"keys"`
	Contended int           `json:"contended_items_per_project"`
	Calls     string        `json:"calls"` // the weights, as --call takes them
	DurationS float64       `json:"duration_s"`
	Projects  []AgentsTable `json:"projects,omitempty"` // with more than one project
	All       AgentsTable   `json:"all"`
	Checks    AgentsChecks  `json:"checks"`
	Ended     string        `json:"ended,omitempty"`
	// MCP is the lane and protocol version the agents' sessions spoke.
	MCP *result.MCPLane `json:"mcp,omitempty"`
	Run *report.Run     `json:"run"`
}

// AgentsTable is one table: a project's rows, or all of them.
type AgentsTable struct {
	Project string      `json:"project"`
	Rows    []AgentsRow `json:"rows"`
}

// AgentsRow is one operation: connect, or a tool.
type AgentsRow struct {
	Op        string           `json:"op"`
	Role      string           `json:"role,omitempty"`
	Calls     int64            `json:"calls"`
	PerSecond float64          `json:"per_second"` // calls that succeeded, per second of the window (connect: 0, a one-off)
	P50       float64          `json:"p50_ms"`
	P95       float64          `json:"p95_ms"`
	P99       float64          `json:"p99_ms"`
	Max       float64          `json:"max_ms"`
	Errors    int64            `json:"errors"`
	Outcomes  map[string]int64 `json:"outcomes,omitempty"` // the errors by kind
}

// AgentsChecks are the checks after the run.
type AgentsChecks struct {
	Mode        string   `json:"mode"`            // how a lost write is told: "versions" or "read-back"
	Keeps       string   `json:"keeps,omitempty"` // read-back: "every write" or "the last write", as a read showed
	Writes      int      `json:"writes"`          // acknowledged writes checked
	Versions    int      `json:"versions"`        // versions: of them, by their versions
	ReadBack    int      `json:"read_back"`       // read-back: of them, whose word was read back
	Items       int      `json:"items"`
	FailedCalls int64    `json:"failed_calls"`
	Lost        []string `json:"lost"`
	// Searched are the items whose last word was searched: never one
	// whose write may have been lost (by version, a lost item is left out).
	Searched     int      `json:"searched"`
	Stale        []string `json:"stale"`
	FreshMs      float64  `json:"fresh_ms"` // the longest an item's last write took to be found
	FreshWithinS float64  `json:"fresh_within_s"`
	Failed       []string `json:"failed"` // one line per kind that failed
}

// AgentsOf is the report of res; run is the run report of the same
// figures (agents.AsRun(res) analysed).
func AgentsOf(res *result.Agents, contended int, run *report.Run) *Agents {
	a := &Agents{Endpoint: res.Endpoint, Agents: res.Agents, Keys: res.Keys, Contended: contended, Calls: res.Calls,
		DurationS: res.Duration.Seconds(), Ended: res.Ended, MCP: res.MCP, Run: run}
	a.All = agentsTable("all", res.All, res.Duration)
	if len(res.Projects) > 1 {
		for _, p := range res.Projects {
			a.Projects = append(a.Projects, agentsTable(p.Name, p.Ops, res.Duration))
		}
	}
	c := res.Checks
	a.Checks = AgentsChecks{Mode: c.Mode, Keeps: c.Keeps, Writes: c.Writes, Versions: c.Versions, ReadBack: c.ReadBack,
		Items: c.Items, FailedCalls: c.FailedCalls, Lost: []string{}, Searched: c.Searched, Stale: []string{},
		FreshMs: float64(c.Fresh.Microseconds()) / 1000, FreshWithinS: c.FreshWithin.Seconds(), Failed: report.NonNil(c.Lines())}
	for _, l := range c.Lost {
		a.Checks.Lost = append(a.Checks.Lost, l.String())
	}
	for _, s := range c.Stale {
		a.Checks.Stale = append(a.Checks.Stale, s.String())
	}
	return a
}

func agentsTable(name string, ops []*result.AgentOp, d time.Duration) AgentsTable {
	t := AgentsTable{Project: name}
	for _, op := range ops {
		row := AgentsRow{Op: op.Name, Role: op.Role, Calls: op.Calls, Errors: op.Failed(), P50: report.PercentileMS(op.Latency, 50), P95: report.PercentileMS(op.Latency, 95),
			P99: report.PercentileMS(op.Latency, 99), Max: report.Millis(op.Latency.Max())}
		if op.Role != "" && d > 0 {
			row.PerSecond = float64(op.Calls-row.Errors) / d.Seconds()
		}
		for k, n := range op.Errors {
			if n > 0 {
				if row.Outcomes == nil {
					row.Outcomes = map[string]int64{}
				}
				row.Outcomes[k] = n
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Failed says whether a check failed or the run ended early.
func (a *Agents) Failed() bool { return len(a.Checks.Failed) > 0 || a.Ended != "" }

// Says is the line under the tables: "checked: 4,213 writes by version,
// none lost; search found every item's last word", or what failed.
func (a *Agents) Says() string {
	if a.Ended != "" {
		return "not checked: the run ended early (" + a.Ended + ")"
	}
	c := a.Checks
	how := "by version"
	if c.Mode == result.AgentReadBack {
		how = "read back (" + c.Keeps + " kept)"
	}
	s := "checked: " + plural(int64(c.Writes), "write") + " " + how
	var bad []string
	if c.FailedCalls > 0 {
		bad = append(bad, plural(c.FailedCalls, "failed call"))
	}
	if n := len(c.Lost); n > 0 {
		bad = append(bad, fmt.Sprintf("%s with lost writes", plural(int64(n), "item")))
	}
	if left := c.Items - c.Searched; left > 0 {
		bad = append(bad, fmt.Sprintf("%s not searched (a lost write)", plural(int64(left), "item")))
	}
	if n := len(c.Stale); n > 0 {
		bad = append(bad, fmt.Sprintf("search did not find the last word of %d of %s within %gs", n,
			plural(int64(c.Searched), "item"), c.FreshWithinS))
	}
	if len(bad) == 0 {
		return s + ", none lost; search found every item's last word"
	}
	return s + ": " + strings.Join(bad, ", ")
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%s %ss", humanize.Comma(n), what)
}

// agentsDuration is a latency as the seed prints it: 18.03ms, 2.4ms, 1.2s.
func agentsDuration(msv float64) string {
	d := time.Duration(msv * float64(time.Millisecond))
	switch {
	case d == 0:
		return "0"
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// table is the seed's table.
func (t AgentsTable) table() *report.Table {
	tb := &report.Table{Columns: []report.Column{{Title: "operation"}, {Title: "calls", Right: true}, {Title: "per s", Right: true},
		{Title: "p50", Right: true}, {Title: "p95", Right: true}, {Title: "p99", Right: true}, {Title: "max", Right: true},
		{Title: "errors", Right: true}}}
	for _, r := range t.Rows {
		tb.AddRow(r.Op, fmt.Sprint(r.Calls), fmt.Sprintf("%.0f", r.PerSecond), agentsDuration(r.P50), agentsDuration(r.P95),
			agentsDuration(r.P99), agentsDuration(r.Max), fmt.Sprint(r.Errors))
	}
	return tb
}

func (a *Agents) head() string {
	lane := ""
	if a.MCP != nil {
		lane = ", MCP " + a.MCP.Lane + " lane, protocol " + a.MCP.ProtocolVersion
	}
	return fmt.Sprintf("agents against %s: %s (%s), %s, %d contended items each, %s, %.1f s measured%s",
		a.Endpoint, plural(int64(a.Agents), "agent"), plural(int64(a.Keys), "key"), plural(int64(max(len(a.Projects), 1)), "project"),
		a.Contended, a.Calls, a.DurationS, lane)
}

// JSON is report.json.
func (a *Agents) JSON() ([]byte, error) { return report.Marshal(a) }

// Page is report.md.
func (a *Agents) Page() string { return "report.md" }

// Files are the run's: profiles, flame graphs, latency distributions.
func (a *Agents) Files() (map[string][]byte, error) { return a.Run.Files() }

// WriteTable prints the tables, the checks, the findings and the warnings.
func (a *Agents) WriteTable(w io.Writer) {
	fmt.Fprintln(w, a.head())
	for _, p := range a.Projects {
		fmt.Fprintf(w, "project %s\n", p.Project)
		p.table().Text(w)
	}
	if len(a.Projects) > 0 {
		fmt.Fprintln(w, "all projects")
	}
	a.All.table().Text(w)
	fmt.Fprintln(w, a.Says())
	for _, l := range a.Checks.Failed {
		fmt.Fprintf(w, "  failed: %s\n", l)
	}
	if c := a.Checks; c.Searched > len(c.Stale) {
		fmt.Fprintf(w, "  search found %d of %s searched by its last word, the slowest in %s\n",
			c.Searched-len(c.Stale), plural(int64(c.Searched), "item"), agentsDuration(c.FreshMs))
	}
	if r := a.Run; r != nil {
		for i, f := range r.Findings {
			fmt.Fprintf(w, "  %d. %s [%s, %s] %.0f%% CPU, %.0f%% allocations — %s\n     %s\n     %s\n", i+1, f.Rule, f.Class, f.Severity,
				100*f.CPUShare, 100*f.AllocShare, f.Endpoint, f.Suggestion, report.Where(f))
		}
		report.ListWarnings(w, r.Warnings)
		report.ListThresholds(w, r.Thresholds)
	}
}

// Markdown is report.md.
func (a *Agents) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# agents against %s\n\n%s.\n\n", a.Endpoint, strings.TrimPrefix(a.head(), "agents against "+a.Endpoint+": "))
	for _, p := range a.Projects {
		fmt.Fprintf(&b, "## Project %s\n\n%s\n", p.Project, p.table().Markdown())
	}
	if len(a.Projects) > 0 {
		b.WriteString("## All projects\n\n")
	}
	b.WriteString(a.All.table().Markdown())
	fmt.Fprintf(&b, "\n%s.\n", a.Says())
	if len(a.Checks.Failed) > 0 {
		b.WriteString("\n## Failed checks\n\n")
		for _, l := range a.Checks.Failed {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	if r := a.Run; r != nil {
		if len(r.Findings) > 0 {
			b.WriteString("\n## Findings\n\n")
			for i, f := range r.Findings {
				fmt.Fprintf(&b, "%d. **%s** (%s, %s) on %s: %.0f%% of CPU, %.0f%% of allocations.  \n   %s  \n   Evidence: %s  "+
					"\n   Frames: `%s`\n",
					i+1, f.Rule, f.Class, f.Severity, f.Endpoint, 100*f.CPUShare, 100*f.AllocShare, f.Suggestion, f.Evidence,
					strings.Join(f.Frames, "` ← `"))
			}
		}
		if len(r.Warnings) > 0 {
			b.WriteString("\n## Warnings\n\n")
			for _, wn := range r.Warnings {
				fmt.Fprintf(&b, "- %s: %s\n", wn.Kind, wn.Message)
			}
		}
		report.WriteThresholds(&b, r.Thresholds)
	}
	return b.String()
}
