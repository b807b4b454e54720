package fuzzing

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/probes/fuzz"
	"github.com/probehq/probe/report/fuzzreport"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// fuzzCommand is `probe fuzz notequery`, `probe fuzz http` and `probe
// fuzz mcp`: the flags all take, and what each adds.
type FuzzCommand struct {
	kind         string // notequery, http or mcp
	load         shared.LoadFlags
	output       shared.OutputFlags
	shrinkTime   time.Duration
	startTimeout time.Duration
	seed         uint64
	inputs       int64
	memLimit     string
	// notequery
	fixtureMode, maxStack string
	notes                 int
	// http and mcp
	Cmd, target string
	Request     shared.RequestFlags
	allowRemote bool
	// mcp
	mcpPath string
	tools   []string
}

func FuzzNoteQueryCommand(fs *flag.FlagSet) shared.Runner {
	c := newFuzzCommand(fs, "notequery")
	shared.RegisterFixtureMode(fs, &c.fixtureMode)
	fs.IntVar(&c.notes, "notes", 60, "notes in the fixture's vault (few: a restart after each crash takes about 0.2 s)")
	fs.StringVar(&c.maxStack, "max-stack", "64MB", "the fixture's goroutine stack cap; Go's default 1GB makes each stack "+
		"overflow take about 4 s here, and the depth that overflows scales with it")
	return c.run
}

func FuzzHTTPCommand(fs *flag.FlagSet) shared.Runner {
	c := newFuzzCommand(fs, "http")
	fs.StringVar(&c.Cmd, "cmd", "", "command that starts the server; {addr} and {port} are replaced, PORT and ADDR are set")
	fs.StringVar(&c.target, "target", "", "URL the server listens on (default: a free loopback port passed to --cmd)")
	c.Request.Register(fs, shared.RequestOptions{
		PathHelp: "path template, e.g. /x?depth={int}&q={str}",
		BodyHelp: `body template, e.g. {"n": {int}, "s": {str}}: in a JSON body a hole is a JSON value of its kind, ` +
			`JSON-escaped inside quotes`})
	fs.BoolVar(&c.allowRemote, "allow-remote", false, "allow a --target that is not on loopback")
	return c.run
}

func newFuzzCommand(fs *flag.FlagSet, kind string) *FuzzCommand {
	c := &FuzzCommand{kind: kind}
	c.load.Register(fs, shared.LoadDefaults{Duration: 60 * time.Second, DurationHelp: "how long to search; confirming and shrinking " +
		"come after (--shrink-time)",
		Timeout: 15 * time.Second, TimeoutHelp: "a request unanswered this long while the target lives is a hang", Concurrency: 4, Search: true})
	c.output.Register(fs, "fuzz-"+kind)
	fs.DurationVar(&c.shrinkTime, "shrink-time", 60*time.Second, "time to confirm and shrink the crashes found, all together")
	fs.DurationVar(&c.startTimeout, "start-timeout", 60*time.Second, "longest wait for the target to listen")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed: the same seed draws the same inputs")
	fs.Int64Var(&c.inputs, "inputs", 0, "end the search after this many inputs, or at --duration if sooner (0: --duration "+
		"alone); with --seed, a run tries the same inputs however fast the machine")
	fs.StringVar(&c.memLimit, "mem-limit", "3GB", "memory cap of the target process (RLIMIT_DATA: its heap and stacks, not the address space it "+
		"reserves), so an out-of-memory "+
		"input cannot take the machine down; 0: none")
	return c
}

func (c *FuzzCommand) run(ctx context.Context, s shared.Streams, words []string) error {
	var o fuzz.Options
	var setting fuzzreport.FuzzSetting
	var memLimit uint64
	// The flags that need no file are checked before --out is claimed, so
	// that a mistyped flag leaves an earlier report folder alone.
	sess, err := shared.Begin(ctx, s, shared.Start{
		Checks: []error{shared.NoWords("fuzz "+c.kind, words), c.load.Validate()},
		Before: func() (err error) {
			memLimit, err = c.checkLimits()
			if err != nil {
				return err
			}
			switch c.kind {
			case "notequery":
				o, setting, err = c.noteQueryTarget(memLimit)
			case "mcp":
				o, setting, err = c.MCPTarget(ctx, s.Stderr, memLimit)
			default:
				o, setting, err = c.HTTPTarget(memLimit)
			}
			return err
		},
		Output: &c.output,
	})
	if err != nil {
		return err
	}
	setting.Name, setting.Concurrency, setting.MemLimit = "fuzz "+c.kind, c.load.Concurrency, memLimit
	o.Concurrency, o.Duration, o.Timeout, o.ShrinkTime, o.Seed = c.load.Concurrency, c.load.Duration, c.load.Timeout, c.shrinkTime, c.seed
	o.Inputs = c.inputs
	progress := shared.NewProgressLine(s.Stderr)
	o.Progress = func(p fuzz.Progress) {
		progress.Show(fmt.Sprintf("fuzz %s %5.1fs  %s  inputs %d (%.0f/s)  crashes %d  restarts %d", c.kind, p.Elapsed.Seconds(), p.Phase,
			p.Inputs, float64(p.Inputs)/max(p.Elapsed.Seconds(), 1e-3), p.Crashes, p.Restarts))
	}
	fmt.Fprintf(s.Stderr, "probe: fuzzing %s for %s with %d clients (then up to %s to shrink what it finds)\n", setting.Server,
		c.load.Duration, c.load.Concurrency, c.shrinkTime)
	res, err := fuzz.Run(ctx, o)
	progress.Clear()
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("interrupted before the target served")
		}
		return err
	}
	rep := fuzzreport.FromFuzz(res, setting)
	var failure error
	switch {
	case len(rep.Crashes) > 0:
		failure = fmt.Errorf("%d distinct crash(es) found; reproductions in %s", len(rep.Crashes), filepath.Join(sess.Dir, "crashers"))
	case res.Ended != "":
		failure = fmt.Errorf("the fuzz run ended early (%s); what was found is in %s", res.Ended, sess.Dir)
	}
	return sess.Finish(rep, failure)
}

// checkLimits checks --shrink-time and --mem-limit, and returns the
// memory cap (0: none).
func (c *FuzzCommand) checkLimits() (uint64, error) {
	if c.shrinkTime < 0 {
		return 0, shared.UsageError{Msg: "--shrink-time must not be negative"}
	}
	if c.inputs < 0 {
		return 0, shared.UsageError{Msg: "--inputs must not be negative"}
	}
	if c.memLimit == "0" {
		return 0, nil
	}
	// Go's runtime maps about 100 MB of its own at start (its heap arena
	// map; 105 MB measured on Go 1.27.3): under 128 MB no Go server starts.
	n, err := shared.ParseBytes(c.memLimit)
	if err != nil || n < 256<<20 {
		return 0, shared.UsageError{Msg: fmt.Sprintf("--mem-limit: want a size of at least 256MB such as 4GB, or 0, got %q", c.memLimit)}
	}
	return n, nil
}

func (c *FuzzCommand) noteQueryTarget(memLimit uint64) (fuzz.Options, fuzzreport.FuzzSetting, error) {
	fail := func(msg string) (fuzz.Options, fuzzreport.FuzzSetting, error) {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, shared.UsageError{Msg: msg}
	}
	if err := shared.ValidFixtureMode(c.fixtureMode); err != nil {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, err
	}
	if c.notes <= 0 {
		return fail("--notes must be positive")
	}
	if n, err := shared.ParseBytes(c.maxStack); err != nil || n < 1<<20 {
		return fail(fmt.Sprintf("--max-stack: want a size of at least 1MB such as 64MB, got %q", c.maxStack))
	}
	o := fuzz.Options{Templates: shared.FixtureFuzzTemplates(), Corpus: shared.FixtureCorpus,
		Header: http.Header{"Content-Type": {"application/json"}},
		Start: func(ctx context.Context, w io.Writer) (*target.Child, error) {
			return shared.StartFixture(ctx, shared.FixtureStart{Mode: c.fixtureMode, Notes: c.notes, MaxStack: c.maxStack, MemLimit: memLimit, Stderr: w})
		}}
	server := fmt.Sprintf("probe fixture serve --mode %s --notes %d --max-stack %s --addr 127.0.0.1:8080", c.fixtureMode, c.notes, c.maxStack)
	if memLimit > 0 {
		server = fmt.Sprintf("(ulimit -d %d; %s)", memLimit>>10, server)
	}
	return o, fuzzreport.FuzzSetting{Server: server, ReproBase: "http://127.0.0.1:8080",
		Header: map[string]string{"Content-Type": "application/json"}}, nil
}

func (c *FuzzCommand) HTTPTarget(memLimit uint64) (fuzz.Options, fuzzreport.FuzzSetting, error) {
	fail := func(msg string) (fuzz.Options, fuzzreport.FuzzSetting, error) {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, shared.UsageError{Msg: msg}
	}
	if strings.TrimSpace(c.Cmd) == "" {
		return fail(`fuzz http: --cmd "SERVER COMMAND" is required: probe starts and supervises the server it fuzzes`)
	}
	if c.Request.Path == "" {
		return fail("fuzz http: --path is required, e.g. --path '/x?depth={int}'")
	}
	argv, err := shared.CommandWords("cmd", c.Cmd)
	if err != nil {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, err
	}
	fields, err := c.Request.HeaderFields()
	if err != nil {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, err
	}
	// Every --header is part of the template, holes or not, so that the
	// crash's request and its repro carry them in the order given.
	var header []result.FuzzField
	for _, f := range fields {
		header = append(header, result.FuzzField{Name: f.Name, Value: f.Value})
	}
	method := c.Request.Method
	if !strings.Contains(method, "{") {
		method = strings.ToUpper(method)
	}
	t, err := fuzz.NewTemplate(method, c.Request.Path, header, c.Request.Body)
	if err != nil {
		return fail(err.Error())
	}
	start, setting, err := c.serverCommand(argv, memLimit)
	if err != nil {
		return fuzz.Options{}, fuzzreport.FuzzSetting{}, err
	}
	return fuzz.Options{Templates: []*fuzz.Template{t}, Start: start}, setting, nil
}

// serverCommand is how --cmd (argv) starts the server on --target's
// address or a free loopback port, and how the report says to start it.
func (c *FuzzCommand) serverCommand(argv []string, memLimit uint64) (func(context.Context, io.Writer) (*target.Child, error),
	fuzzreport.FuzzSetting, error) {
	fixedAddr := ""
	if c.target != "" {
		u, err := shared.ParseTarget(c.target)
		if err != nil {
			return nil, fuzzreport.FuzzSetting{}, err
		}
		if !c.allowRemote && !isLoopback(u.Hostname()) {
			return nil, fuzzreport.FuzzSetting{}, shared.UsageError{Msg: fmt.Sprintf("--target %s is not on loopback: fuzzing another "+
				"host needs --allow-remote", c.target)}
		}
		fixedAddr = u.Host
		if u.Port() == "" {
			fixedAddr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	start := func(ctx context.Context, w io.Writer) (*target.Child, error) {
		ch, err := shared.StartCommand(ctx, argv, fixedAddr, target.ChildSpec{Wait: c.startTimeout, MemLimit: memLimit, Stderr: w})
		if err != nil {
			return nil, fmt.Errorf("--cmd: %v", err)
		}
		return ch, nil
	}
	server := "PORT=8080 " + shared.ShellJoin(shared.FillAddr(argv, "127.0.0.1:8080", "8080"))
	base := "http://127.0.0.1:8080"
	if fixedAddr != "" {
		_, port, _ := net.SplitHostPort(fixedAddr)
		server, base = shared.ShellJoin(shared.FillAddr(argv, fixedAddr, port)), "http://"+fixedAddr
	}
	if memLimit > 0 {
		server = fmt.Sprintf("(ulimit -d %d; %s)", memLimit>>10, server)
	}
	return start, fuzzreport.FuzzSetting{Server: server, ReproBase: base}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
