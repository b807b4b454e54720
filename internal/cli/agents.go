package cli

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

	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/agents"
	"github.com/probehq/probe/report"
)

// agentsCmd is `probe agents`: seed 000's load test of an MCP memory
// server, on any MCP server.
type agentsCmd struct {
	target      targetFlags
	profile     profileFlags
	output      outputFlags
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

func agentsCommand(fs *flag.FlagSet) runner {
	c := &agentsCmd{weights: agents.DefaultWeights}
	c.target.register(fs, false)
	// Small notes, as the seed's memory entries: per-request mode re-indexes
	// the whole vault on every write while readers wait, and 32 agents
	// queue on it (about 0.3 s a write at 100 notes on two busy cores).
	fs.Lookup("notes").DefValue, c.target.notes = "100", 100
	fs.Lookup("synthetic").DefValue, c.target.synthetic = "true", true
	c.profile.register(fs, false, "profile the target while the agents run, and name its write path's costs")
	c.output.register(fs, "agents")
	c.output.registerGates(fs, "p99_ms>250, errors>0, finding:contention")
	fs.StringVar(&c.path, "path", "", "the MCP endpoint (default: the file's agents.path, else /mcp)")
	fs.IntVar(&c.agents, "agents", 32, "agents at once, each its own MCP session and key")
	fs.IntVar(&c.projects, "projects", 1, "projects the agents are spread over ({{project}}); the report has a table for each")
	fs.IntVar(&c.contended, "contended", 20, "items per project the writes share ({{item}}); fewer means more writes on one item")
	fs.Func("call", "the tools' shares of the calls (default write=30,search=47,read=23)", func(s string) error {
		w, err := agents.ParseWeights(s)
		c.weights = w
		return err
	})
	fs.StringVar(&c.keyFile, "key-file", "", "the agents' keys, one a line: agent i takes key i (cycling); default the file's agents.keys, or one key per agent for the fixture")
	fs.DurationVar(&c.freshWithin, "fresh-within", 2*time.Second, "how long after the run an item's last write may take to be found by its word")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "load before the measured time, not recorded")
	registerTimeout(fs, &c.timeout, 30*time.Second, "longest wait for one call")
	return c.run
}

func (c *agentsCmd) validate() error {
	switch {
	case c.agents < 1 || c.agents > 10000:
		return usageError{fmt.Sprintf("--agents %d: want 1 to 10000", c.agents)}
	case c.projects < 1 || c.projects > 64 || c.projects > c.agents:
		return usageError{fmt.Sprintf("--projects %d: want 1 to 64, and no more than --agents", c.projects)}
	case c.contended < 1 || c.contended > 1000:
		return usageError{fmt.Sprintf("--contended %d: want 1 to 1000", c.contended)}
	case c.duration <= 0 || c.duration > maxDuration:
		return usageError{fmt.Sprintf("--duration %v: want more than 0 and at most %v", c.duration, maxDuration)}
	case c.warmup < 0 || c.warmup > maxDuration:
		return usageError{fmt.Sprintf("--warmup %v: want 0 or more and at most %v", c.warmup, maxDuration)}
	case c.freshWithin <= 0 || c.freshWithin > 10*time.Minute:
		return usageError{fmt.Sprintf("--fresh-within %v: want more than 0 and at most 10m", c.freshWithin)}
	case c.path != "" && !strings.HasPrefix(c.path, "/"):
		return usageError{fmt.Sprintf("--path %q must start with /", c.path)}
	}
	return validTimeout(c.timeout)
}

// readKeys reads --key-file: one key a line, no empty line inside.
func readKeys(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError{"--key-file: " + err.Error()}
	}
	keys := keyLines(string(b))
	for i, k := range keys {
		if k == "" || strings.ContainsAny(k, " \t") {
			return nil, usageError{fmt.Sprintf("--key-file %s: line %d: want one key a line", path, i+1)}
		}
	}
	if len(keys) == 0 {
		return nil, usageError{"--key-file " + path + ": no keys in it"}
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

func (c *agentsCmd) run(ctx context.Context, s streams, words []string) error {
	if err := noWords("agents", words); err != nil {
		return err
	}
	sess, err := begin(ctx, s, start{
		checks: []error{c.target.validate(), c.validate(), c.profile.validate()},
		gates:  "run", output: &c.output, profile: &c.profile,
	})
	if err != nil {
		return err
	}
	file, err := readFileFlag(ctx, &c.target, &c.profile)
	if err != nil {
		return err
	}
	spec := agents.FixtureSpec()
	path := "/mcp"
	var keys []string
	if file != nil && file.agents != nil {
		spec = file.agents.Spec()
		keys = file.agents.Keys
		if file.agents.Path != "" {
			path = file.agents.Path
		}
	}
	if c.path != "" {
		path = c.path
	}
	if err := spec.Check(); err != nil {
		return usageError{"agents: " + err.Error()}
	}
	if c.keyFile != "" {
		if keys, err = readKeys(c.keyFile); err != nil {
			return err
		}
	}
	fixture := c.target.target == ""
	var target *probes.Target
	var warnings []probes.Warning
	if fixture {
		if len(keys) == 0 { // one key per agent, as the seed's agents
			keys = agentKeys(c.agents)
		}
		fmt.Fprintf(s.stderr, "probe: starting the fixture (%s mode, %d notes, %d project(s), %d keys)…\n", c.target.fixtureMode, c.target.notes, c.projects, len(keys))
		child, err := startFixture(ctx, fixtureStart{mode: c.target.fixtureMode, notes: c.target.notes, synthetic: c.target.synthetic,
			key: c.target.key, keys: keys, projects: c.projects, contention: c.profile.profile})
		if err != nil {
			return err
		}
		defer child.Stop()
		u, _ := parseTarget(child.URL)
		target = &probes.Target{URL: u, Child: child}
		if c.target.pin {
			ok, err := probes.Pin(child.PID())
			switch {
			case err != nil:
				warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin: " + err.Error()})
			case !ok:
				warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin needs two or more CPUs"})
			}
		}
	} else {
		t, ws, cleanup, err := openTarget(ctx, &c.target, file, s.stderr)
		warnings = ws
		if err != nil {
			return err
		}
		defer cleanup()
		target = t
	}
	header := http.Header{}
	for _, f := range target.Header {
		header.Set(f.Name, f.Value)
	}
	if len(keys) > 0 {
		header.Del("Authorization") // each agent sends its own
	}
	o := agents.Options{Endpoint: target.URL.String() + path, Header: header, Keys: keys, Agents: c.agents, Projects: c.projects,
		Contended: c.contended, Weights: c.weights, Duration: c.duration, Warmup: c.warmup, Timeout: c.timeout, FreshWithin: c.freshWithin}
	var profiles *probes.Profiles
	var contention *probes.Contention
	po := c.profile.options(target.URL, c.duration)
	if po != nil {
		if err := probes.CheckPprof(ctx, po.PprofURL); err != nil {
			fmt.Fprintf(s.stderr, "probe: %s\n", probes.NoPprof(fmt.Sprintf("the target serves no profiles (%v): the run goes on without them", err)))
			po = nil
		}
	}
	if po != nil {
		o.Window = func(ctx context.Context, d time.Duration) {
			counted := probes.StartContention(ctx, *po)
			profiles = probes.CaptureProfiles(ctx, *po, d)
			contention = counted()
		}
	}
	load, err := agents.Prepare(ctx, spec, o)
	if err != nil {
		if _, bad := errors.AsType[*agents.ErrTool](err); bad {
			return usageError{"agents: " + err.Error()}
		}
		return fmt.Errorf("target %s: %v", target.URL, err)
	}
	fmt.Fprintf(s.stderr, "probe: %d agents over %d project(s), %s for %s after %s warm-up…\n", c.agents, c.projects, c.weights, c.duration, c.warmup)
	res, err := load.Run(ctx)
	if err != nil {
		return fmt.Errorf("target %s: %v", target.URL, err)
	}
	run := res.AsRun()
	run.Profiles = profiles
	if profiles != nil {
		for _, w := range profiles.Warnings {
			run.Warn(w.Kind, w.Message)
		}
	}
	if target.Child != nil {
		if e := target.Child.Exit(); e != nil && res.Ended == "" {
			res.Ended, run.Ended, run.TargetExit = "target exited: "+e.Status, "target exited: "+e.Status, e
		}
	}
	for _, w := range warnings {
		run.Warn(w.Kind, w.Message)
	}
	rr := report.FromRun(run, pipeline.AnalyzeAgents(run, contention, sess.rules))
	doc := report.AgentsOf(res, c.contended, rr)
	rr.Thresholds = sess.judgeRuns([]*report.RunReport{rr})
	var failure error
	if doc.Failed() {
		lines := doc.Checks.Failed
		if doc.Ended != "" {
			lines = append([]string{"the run ended early: " + doc.Ended}, lines...)
		}
		failure = agentsFailed{lines: lines, dir: sess.dir}
	}
	return sess.finish(doc, failure)
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
