package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/agents"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
)

// agentsCmd is `probe agents`: seed 000's load test of an MCP memory
// server, on any MCP server.
type agentsCmd struct {
	target      shared.TargetFlags
	profile     shared.ProfileFlags
	output      shared.OutputFlags
	path        string
	agents      int
	projects    int
	contended   int
	weights     agents.Weights
	keyFile     string
	freshWithin time.Duration
	duration    time.Duration
	warmup      time.Duration
	timeout     time.Duration
}

func AgentsCommand(fs *flag.FlagSet) shared.Runner {
	c := &agentsCmd{weights: agents.DefaultWeights}
	c.target.Register(fs, shared.TargetOptions{})
	// Small notes, as the seed's memory entries: per-request mode re-indexes
	// the whole vault on every write while readers wait, and 32 agents
	// queue on it (about 0.3 s a write at 100 notes on two busy cores).
	fs.Lookup("notes").DefValue, c.target.Notes = "100", 100
	fs.Lookup("synthetic").DefValue, c.target.Synthetic = "true", true
	c.profile.Register(fs, shared.ProfileOptions{
		Help: "profile the target while the agents run, and name its write path's costs"})
	c.output.Register(fs, "agents")
	c.output.RegisterGates(fs, "p99_ms>250, errors>0, finding:contention")
	fs.StringVar(&c.path, "path", "", "the MCP endpoint (default: the file's agents.path, else /mcp)")
	fs.IntVar(&c.agents, "agents", 32, "agents at once, each its own MCP session and key")
	fs.IntVar(&c.projects, "projects", 1, "projects the agents are spread over ({{project}}); the report has a table for each")
	fs.IntVar(&c.contended, "contended", 20, "items per project the writes share ({{item}}); fewer means more writes on one item")
	fs.Func("call", "the tools' shares of the calls (default write=30,search=47,read=23)", func(s string) error {
		w, err := agents.ParseWeights(s)
		c.weights = w
		return err
	})
	fs.StringVar(&c.keyFile, "key-file", "", "the agents' keys, one a line: agent i takes key i (cycling); default the file's "+
		"agents.keys, or one key per agent for the fixture")
	fs.DurationVar(&c.freshWithin, "fresh-within", 2*time.Second, "how long after the run an item's last write may take to "+
		"be found by its word")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "load before the measured time, not recorded")
	shared.RegisterTimeout(fs, &c.timeout, 30*time.Second, "longest wait for one call")
	return c.run
}

func (c *agentsCmd) validate() error {
	switch {
	case c.agents < 1 || c.agents > 10000:
		return shared.UsageError{Msg: fmt.Sprintf("--agents %d: want 1 to 10000", c.agents)}
	case c.projects < 1 || c.projects > 64 || c.projects > c.agents:
		return shared.UsageError{Msg: fmt.Sprintf("--projects %d: want 1 to 64, and no more than --agents", c.projects)}
	case c.contended < 1 || c.contended > 1000:
		return shared.UsageError{Msg: fmt.Sprintf("--contended %d: want 1 to 1000", c.contended)}
	case c.duration <= 0 || c.duration > shared.MaxDuration:
		return shared.UsageError{Msg: fmt.Sprintf("--duration %v: want more than 0 and at most %v", c.duration, shared.MaxDuration)}
	case c.warmup < 0 || c.warmup > shared.MaxDuration:
		return shared.UsageError{Msg: fmt.Sprintf("--warmup %v: want 0 or more and at most %v", c.warmup, shared.MaxDuration)}
	case c.freshWithin <= 0 || c.freshWithin > 10*time.Minute:
		return shared.UsageError{Msg: fmt.Sprintf("--fresh-within %v: want more than 0 and at most 10m", c.freshWithin)}
	case c.path != "" && !strings.HasPrefix(c.path, "/"):
		return shared.UsageError{Msg: fmt.Sprintf("--path %q must start with /", c.path)}
	}
	return shared.ValidTimeout(c.timeout)
}

// readKeys reads --key-file: one key a line, no empty line inside.
func readKeys(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, shared.UsageError{Msg: "--key-file: " + err.Error()}
	}
	keys := shared.KeyLines(string(b))
	for i, k := range keys {
		if k == "" || strings.ContainsAny(k, " \t") {
			return nil, shared.UsageError{Msg: fmt.Sprintf("--key-file %s: line %d: want one key a line", path, i+1)}
		}
	}
	if len(keys) == 0 {
		return nil, shared.UsageError{Msg: "--key-file " + path + ": no keys in it"}
	}
	return keys, nil
}

// agentsFailed is a run whose checks failed: one line per kind.
type agentsFailed struct {
	lines []string
	dir   string
}

func (e agentsFailed) Error() string {
	return strings.Join(e.lines, "\n") + "\nsee " + filepath.Join(e.dir, "report.md")
}

func (c *agentsCmd) run(ctx context.Context, s shared.Streams, words []string) error {
	if err := shared.NoWords("agents", words); err != nil {
		return err
	}
	sess, err := shared.Begin(ctx, s, shared.Start{
		Checks: []error{c.target.Validate(), c.validate(), c.profile.Validate()},
		Gates:  "run", Output: &c.output, Profile: &c.profile,
	})
	if err != nil {
		return err
	}
	file, err := shared.ReadFileFlag(ctx, &c.target, &c.profile)
	if err != nil {
		return err
	}
	spec := agents.FixtureSpec()
	path := "/mcp"
	var keys []string
	if file != nil && file.Agents != nil {
		spec = file.Agents.Spec()
		keys = file.Agents.Keys
		if file.Agents.Path != "" {
			path = file.Agents.Path
		}
	}
	if c.path != "" {
		path = c.path
	}
	if err := spec.Check(); err != nil {
		return shared.UsageError{Msg: "agents: " + err.Error()}
	}
	if c.keyFile != "" {
		if keys, err = readKeys(c.keyFile); err != nil {
			return err
		}
	}
	fixture := c.target.Target == ""
	var tg *probes.Target
	var warnings []result.Warning
	if fixture {
		if len(keys) == 0 { // one key per agent, as the seed's agents
			keys = agentKeys(c.agents)
		}
		fmt.Fprintf(s.Stderr, "probe: starting the fixture (%s mode, %d notes, %d project(s), %d keys)…\n", c.target.FixtureMode,
			c.target.Notes, c.projects, len(keys))
		child, err := shared.StartFixture(ctx, shared.FixtureStart{Mode: c.target.FixtureMode, Notes: c.target.Notes, Synthetic: c.target.Synthetic,
			Key: c.target.Key, Keys: keys, Projects: c.projects, Contention: c.profile.Profile})
		if err != nil {
			return err
		}
		defer child.Stop()
		u, _ := shared.ParseTarget(child.URL)
		tg = &probes.Target{URL: u, Child: child}
		if c.target.Pin {
			warnings = append(warnings, shared.Pin(child)...)
		}
	} else {
		t, ws, cleanup, err := shared.OpenTarget(ctx, &c.target, file, s.Stderr)
		warnings = ws
		if err != nil {
			return err
		}
		defer cleanup()
		tg = t
	}
	header := http.Header{}
	for _, f := range tg.Header {
		header.Set(f.Name, f.Value)
	}
	if len(keys) > 0 {
		header.Del("Authorization") // each agent sends its own
	}
	o := agents.Options{Endpoint: tg.URL.String() + path, Header: header, Keys: keys, Agents: c.agents, Projects: c.projects,
		Contended: c.contended, Weights: c.weights, Duration: c.duration, Warmup: c.warmup, Timeout: c.timeout, FreshWithin: c.freshWithin}
	doc, rr, err := pipeline.Agents(ctx, pipeline.AgentsOptions{Spec: spec, Load: o, Target: tg,
		Profile: c.profile.Options(tg.URL, c.duration), Warnings: warnings, Contended: c.contended, Rules: sess.Rules,
		Say: func(line string) { fmt.Fprintf(s.Stderr, "probe: %s\n", line) }})
	if _, bad := errors.AsType[*agents.ErrTool](err); bad {
		return shared.UsageError{Msg: "agents: " + err.Error()}
	}
	if err != nil {
		return fmt.Errorf("target %s: %v", tg.URL, err)
	}
	rr.Thresholds = sess.JudgeRuns([]*report.Run{rr})
	var failure error
	if doc.Failed() {
		lines := doc.Checks.Failed
		if doc.Ended != "" {
			lines = append([]string{"the run ended early: " + doc.Ended}, lines...)
		}
		failure = agentsFailed{lines: lines, dir: sess.Dir}
	}
	return sess.Finish(doc, failure)
}

// agentKeys are fresh keys for the fixture's agents, one each.
func agentKeys(n int) []string {
	b := make([]byte, 6)
	rand.Read(b)
	prefix := "agent-" + hex.EncodeToString(b)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%d", prefix, i+1)
	}
	return keys
}
