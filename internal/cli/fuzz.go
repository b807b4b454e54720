package cli

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

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/fuzz"
	"github.com/probehq/probe/report"
)

// fuzzCommand is `probe fuzz notequery` and `probe fuzz http`: the flags
// both take, and what each adds.
type fuzzCommand struct {
	kind         string // notequery or http
	load         loadFlags
	output       outputFlags
	shrinkTime   time.Duration
	startTimeout time.Duration
	seed         uint64
	memLimit     string
	// notequery
	fixtureMode, maxStack string
	notes                 int
	// http
	cmd, target string
	request     requestFlags
	allowRemote bool
}

func fuzzNoteQueryCommand(fs *flag.FlagSet) runner {
	c := newFuzzCommand(fs, "notequery")
	registerFixtureMode(fs, &c.fixtureMode)
	fs.IntVar(&c.notes, "notes", 60, "notes in the fixture's vault (few: a restart after each crash takes about 0.2 s)")
	fs.StringVar(&c.maxStack, "max-stack", "64MB", "the fixture's goroutine stack cap; Go's default 1GB makes each stack overflow take about 4 s here, and the depth that overflows scales with it")
	return c.run
}

func fuzzHTTPCommand(fs *flag.FlagSet) runner {
	c := newFuzzCommand(fs, "http")
	fs.StringVar(&c.cmd, "cmd", "", "command that starts the server; {addr} and {port} are replaced, PORT and ADDR are set")
	fs.StringVar(&c.target, "target", "", "URL the server listens on (default: a free loopback port passed to --cmd)")
	c.request.register(fs, "path template, e.g. /x?depth={int}&q={str}",
		`body template, e.g. {"n": {int}, "s": {str}}: in a JSON body a hole is a JSON value of its kind, JSON-escaped inside quotes`,
		"", false)
	fs.BoolVar(&c.allowRemote, "allow-remote", false, "allow a --target that is not on loopback")
	return c.run
}

func newFuzzCommand(fs *flag.FlagSet, kind string) *fuzzCommand {
	c := &fuzzCommand{kind: kind}
	c.load.register(fs, loadDefaults{duration: 60 * time.Second, durationHelp: "how long to search; confirming and shrinking come after (--shrink-time)",
		timeout: 15 * time.Second, timeoutHelp: "a request unanswered this long while the target lives is a hang", concurrency: 4, search: true})
	c.output.register(fs, "fuzz-"+kind)
	fs.DurationVar(&c.shrinkTime, "shrink-time", 60*time.Second, "time to confirm and shrink the crashes found, all together")
	fs.DurationVar(&c.startTimeout, "start-timeout", 60*time.Second, "longest wait for the target to listen")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed: the same seed draws the same inputs")
	fs.StringVar(&c.memLimit, "mem-limit", "3GB", "address-space cap of the target process (RLIMIT_AS), so an out-of-memory input cannot take the machine down; 0: none")
	return c
}

func (c *fuzzCommand) run(ctx context.Context, s streams, words []string) error {
	var o fuzz.Options
	var setting report.FuzzSetting
	var memLimit uint64
	// The flags that need no file are checked before --out is claimed, so
	// that a mistyped flag leaves an earlier report folder alone.
	sess, err := begin(ctx, s, start{
		checks: []error{noWords("fuzz "+c.kind, words), c.load.validate()},
		before: func() (err error) {
			memLimit, err = c.checkLimits()
			if err != nil {
				return err
			}
			if c.kind == "notequery" {
				o, setting, err = c.noteQueryTarget(memLimit)
			} else {
				o, setting, err = c.httpTarget(memLimit)
			}
			return err
		},
		output: &c.output,
	})
	if err != nil {
		return err
	}
	setting.Name, setting.Concurrency, setting.MemLimit = "fuzz "+c.kind, c.load.concurrency, memLimit
	o.Concurrency, o.Duration, o.Timeout, o.ShrinkTime, o.Seed = c.load.concurrency, c.load.duration, c.load.timeout, c.shrinkTime, c.seed
	progress := newProgressLine(s.stderr)
	o.Progress = func(p fuzz.Progress) {
		progress.show(fmt.Sprintf("fuzz %s %5.1fs  %s  inputs %d (%.0f/s)  crashes %d  restarts %d", c.kind, p.Elapsed.Seconds(), p.Phase,
			p.Inputs, float64(p.Inputs)/max(p.Elapsed.Seconds(), 1e-3), p.Crashes, p.Restarts))
	}
	fmt.Fprintf(s.stderr, "probe: fuzzing %s for %s with %d clients (then up to %s to shrink what it finds)\n", setting.Server, c.load.duration, c.load.concurrency, c.shrinkTime)
	res, err := fuzz.Run(ctx, o)
	progress.clear()
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("interrupted before the target served")
		}
		return err
	}
	rep := report.FromFuzz(res, setting)
	var failure error
	switch {
	case len(rep.Crashes) > 0:
		failure = fmt.Errorf("%d distinct crash(es) found; reproductions in %s", len(rep.Crashes), filepath.Join(sess.dir, "crashers"))
	case res.Ended != "":
		failure = fmt.Errorf("the fuzz run ended early (%s); what was found is in %s", res.Ended, sess.dir)
	}
	return sess.finish(rep, failure)
}

// checkLimits checks --shrink-time and --mem-limit, and returns the
// address-space cap (0: none).
func (c *fuzzCommand) checkLimits() (uint64, error) {
	if c.shrinkTime < 0 {
		return 0, usageError{"--shrink-time must not be negative"}
	}
	if c.memLimit == "0" {
		return 0, nil
	}
	n, err := parseBytes(c.memLimit)
	if err != nil || n < 64<<20 {
		return 0, usageError{fmt.Sprintf("--mem-limit: want a size of at least 64MB such as 4GB, or 0, got %q", c.memLimit)}
	}
	return n, nil
}

func (c *fuzzCommand) noteQueryTarget(memLimit uint64) (fuzz.Options, report.FuzzSetting, error) {
	fail := func(msg string) (fuzz.Options, report.FuzzSetting, error) {
		return fuzz.Options{}, report.FuzzSetting{}, usageError{msg}
	}
	if err := validFixtureMode(c.fixtureMode); err != nil {
		return fuzz.Options{}, report.FuzzSetting{}, err
	}
	if c.notes <= 0 {
		return fail("--notes must be positive")
	}
	if n, err := parseBytes(c.maxStack); err != nil || n < 1<<20 {
		return fail(fmt.Sprintf("--max-stack: want a size of at least 1MB such as 64MB, got %q", c.maxStack))
	}
	o := fuzz.Options{Templates: fixtureFuzzTemplates(), Corpus: fixtureCorpus,
		Header: http.Header{"Content-Type": {"application/json"}},
		Start: func(ctx context.Context, w io.Writer) (*probes.Child, error) {
			return startFixture(ctx, fixtureStart{mode: c.fixtureMode, notes: c.notes, maxStack: c.maxStack, memLimit: memLimit, stderr: w})
		}}
	server := fmt.Sprintf("probe fixture serve --mode %s --notes %d --max-stack %s --addr 127.0.0.1:8080", c.fixtureMode, c.notes, c.maxStack)
	if memLimit > 0 {
		server = fmt.Sprintf("(ulimit -v %d; %s)", memLimit>>10, server)
	}
	return o, report.FuzzSetting{Server: server, ReproBase: "http://127.0.0.1:8080", Header: map[string]string{"Content-Type": "application/json"}}, nil
}

func (c *fuzzCommand) httpTarget(memLimit uint64) (fuzz.Options, report.FuzzSetting, error) {
	fail := func(msg string) (fuzz.Options, report.FuzzSetting, error) {
		return fuzz.Options{}, report.FuzzSetting{}, usageError{msg}
	}
	if strings.TrimSpace(c.cmd) == "" {
		return fail(`fuzz http: --cmd "SERVER COMMAND" is required: probe starts and supervises the server it fuzzes`)
	}
	if c.request.path == "" {
		return fail("fuzz http: --path is required, e.g. --path '/x?depth={int}'")
	}
	argv, err := commandWords("cmd", c.cmd)
	if err != nil {
		return fuzz.Options{}, report.FuzzSetting{}, err
	}
	fields, err := c.request.headerFields()
	if err != nil {
		return fuzz.Options{}, report.FuzzSetting{}, err
	}
	// Every --header is part of the template, holes or not, so that the
	// crash's request and its repro carry them in the order given.
	var header []fuzz.Field
	for _, f := range fields {
		header = append(header, fuzz.Field{Name: f.Name, Value: f.Value})
	}
	method := c.request.method
	if !strings.Contains(method, "{") {
		method = strings.ToUpper(method)
	}
	t, err := fuzz.NewTemplate(method, c.request.path, header, c.request.body)
	if err != nil {
		return fail(err.Error())
	}
	fixedAddr := ""
	if c.target != "" {
		u, err := parseTarget(c.target)
		if err != nil {
			return fuzz.Options{}, report.FuzzSetting{}, err
		}
		if !c.allowRemote && !isLoopback(u.Hostname()) {
			return fail(fmt.Sprintf("--target %s is not on loopback: fuzzing another host needs --allow-remote", c.target))
		}
		fixedAddr = u.Host
		if u.Port() == "" {
			fixedAddr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	start := func(ctx context.Context, w io.Writer) (*probes.Child, error) {
		ch, err := startCommand(ctx, argv, fixedAddr, probes.ChildSpec{Wait: c.startTimeout, MemLimit: memLimit, Stderr: w})
		if err != nil {
			return nil, fmt.Errorf("--cmd: %v", err)
		}
		return ch, nil
	}
	server := "PORT=8080 " + shellJoin(fillAddr(argv, "127.0.0.1:8080", "8080"))
	base := "http://127.0.0.1:8080"
	if fixedAddr != "" {
		_, port, _ := net.SplitHostPort(fixedAddr)
		server, base = shellJoin(fillAddr(argv, fixedAddr, port)), "http://"+fixedAddr
	}
	if memLimit > 0 {
		server = fmt.Sprintf("(ulimit -v %d; %s)", memLimit>>10, server)
	}
	return fuzz.Options{Templates: []*fuzz.Template{t}, Start: start},
		report.FuzzSetting{Server: server, ReproBase: base}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
