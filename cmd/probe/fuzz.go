package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mvdan.cc/sh/v3/shell"

	"probe/analyzers/report"
	"probe/probes"
	"probe/probes/fuzz"
)

// fuzzFlags are `probe fuzz`'s flags.
type fuzzFlags struct {
	duration, shrinkTime, timeout, startTimeout time.Duration
	concurrency                                 int
	seed                                        uint64
	memLimit, out                               string
	json                                        bool
	// notequery
	fixtureMode, maxStack string
	notes                 int
	// http
	cmd, target, path, body, method string
	headers                         []string
	allowRemote                     bool
}

const fuzzUsage = `usage: probe fuzz notequery [flags] | probe fuzz http --cmd "SERVER COMMAND" --path "/x?depth={int}&q={str}" [--body TEMPLATE] (placeholders {int} {uint} {str} {json} {jsonnet}; the command may use {addr} and {port}, or read PORT)`

func runFuzz(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "notequery" && args[0] != "http" {
		return usageError{fuzzUsage}
	}
	kind := args[0]
	fs := flag.NewFlagSet("probe fuzz "+kind, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f fuzzFlags
	fs.DurationVar(&f.duration, "duration", 60*time.Second, "how long to search; confirming and shrinking come after (--shrink-time)")
	fs.DurationVar(&f.shrinkTime, "shrink-time", 60*time.Second, "time to confirm and shrink the crashes found, all together")
	fs.DurationVar(&f.timeout, "timeout", 15*time.Second, "a request unanswered this long while the target lives is a hang")
	fs.DurationVar(&f.startTimeout, "start-timeout", 60*time.Second, "longest wait for the target to listen")
	fs.IntVar(&f.concurrency, "concurrency", 4, "concurrent clients (races such as concurrent map writes show only under load)")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed: the same seed draws the same inputs")
	fs.StringVar(&f.memLimit, "mem-limit", "3GB", "address-space cap of the target process (RLIMIT_AS), so an out-of-memory input cannot take the machine down; 0: none")
	fs.StringVar(&f.out, "out", "", "report folder (default probe-out/fuzz-<name>-<time>/); crashers/ inside it")
	fs.BoolVar(&f.json, "json", false, "print report.json on stdout and nothing else there")
	if kind == "notequery" {
		fs.StringVar(&f.fixtureMode, "fixture-mode", "per-request", "mode of the started fixture: per-request or load-time")
		fs.IntVar(&f.notes, "notes", 60, "notes in the fixture's vault (few: a restart after each crash takes about 0.2 s)")
		fs.StringVar(&f.maxStack, "max-stack", "64MB", "the fixture's goroutine stack cap; Go's default 1GB makes each stack overflow take about 4 s here, and the depth that overflows scales with it")
	} else {
		fs.StringVar(&f.cmd, "cmd", "", "command that starts the server; {addr} and {port} are replaced, PORT and ADDR are set")
		fs.StringVar(&f.target, "target", "", "URL the server listens on (default: a free loopback port passed to --cmd)")
		fs.StringVar(&f.path, "path", "", "path template, e.g. /x?depth={int}&q={str}")
		fs.StringVar(&f.body, "body", "", `body template, e.g. {"query": "{jsonnet}"} (JSON-escaped inside quotes)`)
		fs.StringVar(&f.method, "method", "", "HTTP method (default GET, or POST with --body)")
		fs.Func("header", "request header Name:value (repeatable)", func(s string) error {
			f.headers = append(f.headers, s)
			return nil
		})
		fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a --target that is not on loopback")
	}
	if err := fs.Parse(args[1:]); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("fuzz %s: unexpected argument %q", kind, fs.Arg(0))}
	}
	switch {
	case f.duration <= 0:
		return usageError{"--duration must be positive"}
	case f.shrinkTime < 0:
		return usageError{"--shrink-time must not be negative"}
	case f.timeout <= 0:
		return usageError{"--timeout must be positive"}
	case f.concurrency <= 0:
		return usageError{"--concurrency must be positive"}
	}
	var memLimit uint64
	if f.memLimit != "0" {
		n, err := parseBytes(f.memLimit)
		if err != nil || n < 64<<20 {
			return usageError{fmt.Sprintf("--mem-limit: want a size of at least 64MB such as 4GB, or 0, got %q", f.memLimit)}
		}
		memLimit = n
	}

	var o fuzz.Options
	var setting report.FuzzSetting
	var err error
	if kind == "notequery" {
		o, setting, err = f.noteQueryTarget(memLimit)
	} else {
		o, setting, err = f.httpTarget(memLimit)
	}
	if err != nil {
		return err
	}
	setting.Name, setting.Concurrency, setting.MemLimit = "fuzz "+kind, f.concurrency, memLimit
	o.Concurrency, o.Duration, o.Timeout, o.ShrinkTime, o.Seed = f.concurrency, f.duration, f.timeout, f.shrinkTime, f.seed
	progress := newProgressLine(stderr)
	o.Progress = func(p fuzz.Progress) {
		progress.show(fmt.Sprintf("fuzz %s %5.1fs  %s  inputs %d (%.0f/s)  crashes %d  restarts %d", kind, p.Elapsed.Seconds(), p.Phase,
			p.Inputs, float64(p.Inputs)/max(p.Elapsed.Seconds(), 1e-3), p.Crashes, p.Restarts))
	}
	fmt.Fprintf(stderr, "probe: fuzzing %s for %s with %d clients (then up to %s to shrink what it finds)\n", setting.Server, f.duration, f.concurrency, f.shrinkTime)
	res, err := fuzz.Run(ctx, o)
	progress.clear()
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("interrupted before the target served")
		}
		return err
	}
	rep := report.FromFuzz(res, setting)
	dir := outDir(f.out, "fuzz-"+kind)
	if err := writeAndShow(rep, dir, "report.md", f.json, stdout, stderr); err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return interruptedError{dir}
	case len(rep.Crashes) > 0:
		return fmt.Errorf("%d distinct crash(es) found; reproductions in %s", len(rep.Crashes), filepath.Join(dir, "crashers"))
	case res.Ended != "":
		return fmt.Errorf("the fuzz run ended early (%s); what was found is in %s", res.Ended, dir)
	}
	return nil
}

// noteQueryTemplates are the fixture's ways in to its Jsonnet evaluator:
// ad-hoc queries, and the stored ones whose sizes come from the URL.
func noteQueryTemplates() []*fuzz.Template {
	specs := []struct{ method, path, body string }{
		{"POST", "/query", `{"query": "{jsonnet}"}`},
		{"POST", "/query", `{"query": "{jsonnet}", "params": {json}}`},
		{"GET", "/q/link-walk?depth={int}", ""},
		{"GET", "/q/most-linking?limit={int}", ""},
		{"GET", "/q/by-tag?tag={str}", ""},
		{"GET", "/q/recent?limit={int}", ""},
	}
	var out []*fuzz.Template
	for _, s := range specs {
		t, err := fuzz.ParseTemplate(s.method, s.path, s.body)
		if err != nil {
			panic(err) // the specs above are constants
		}
		out = append(out, t)
	}
	return out
}

func (f *fuzzFlags) noteQueryTarget(memLimit uint64) (fuzz.Options, report.FuzzSetting, error) {
	if f.fixtureMode != "per-request" && f.fixtureMode != "load-time" {
		return fuzz.Options{}, report.FuzzSetting{}, usageError{fmt.Sprintf("--fixture-mode %q: want per-request or load-time", f.fixtureMode)}
	}
	if f.notes <= 0 {
		return fuzz.Options{}, report.FuzzSetting{}, usageError{"--notes must be positive"}
	}
	if n, err := parseBytes(f.maxStack); err != nil || n < 1<<20 {
		return fuzz.Options{}, report.FuzzSetting{}, usageError{fmt.Sprintf("--max-stack: want a size of at least 1MB such as 64MB, got %q", f.maxStack)}
	}
	exe, err := os.Executable()
	if err != nil {
		return fuzz.Options{}, report.FuzzSetting{}, err
	}
	extra := []string{"--max-stack", f.maxStack}
	o := fuzz.Options{Templates: noteQueryTemplates(), Corpus: fuzz.NotesCorpus,
		Header: http.Header{"Content-Type": {"application/json"}},
		Start: func(ctx context.Context, w io.Writer) (*probes.Child, error) {
			c, err := probes.StartFixture(ctx, probes.FixtureOptions{Executable: exe, Mode: f.fixtureMode, Notes: f.notes, Args: extra, MemLimit: memLimit, Stderr: w})
			if err != nil {
				return nil, fmt.Errorf("fixture: %v", err)
			}
			return c, nil
		}}
	server := fmt.Sprintf("probe fixture serve --mode %s --notes %d --max-stack %s --addr 127.0.0.1:8080", f.fixtureMode, f.notes, f.maxStack)
	if memLimit > 0 {
		server = fmt.Sprintf("(ulimit -v %d; %s)", memLimit>>10, server)
	}
	return o, report.FuzzSetting{Server: server, ReproBase: "http://127.0.0.1:8080", Header: map[string]string{"Content-Type": "application/json"}}, nil
}

func (f *fuzzFlags) httpTarget(memLimit uint64) (fuzz.Options, report.FuzzSetting, error) {
	fail := func(msg string) (fuzz.Options, report.FuzzSetting, error) {
		return fuzz.Options{}, report.FuzzSetting{}, usageError{msg}
	}
	if strings.TrimSpace(f.cmd) == "" {
		return fail(`fuzz http: --cmd "SERVER COMMAND" is required: probe starts and supervises the server it fuzzes`)
	}
	if f.path == "" {
		return fail("fuzz http: --path is required, e.g. --path '/x?depth={int}'")
	}
	argv, err := shell.Fields(f.cmd, func(string) string { return "" })
	if err != nil || len(argv) == 0 {
		return fail(fmt.Sprintf("--cmd %q: %v", f.cmd, err))
	}
	t, err := fuzz.ParseTemplate(strings.ToUpper(f.method), f.path, f.body)
	if err != nil {
		return fail(err.Error())
	}
	header := http.Header{}
	shown := map[string]string{}
	for _, h := range f.headers {
		field, err := probes.ParseHeader(h)
		if err != nil {
			return fail(err.Error())
		}
		header.Add(field.Name, field.Value)
		shown[field.Name] = field.Value
	}
	fixedAddr := ""
	if f.target != "" {
		u, err := url.Parse(f.target)
		if err != nil || u.Host == "" || u.Scheme != "http" {
			return fail(fmt.Sprintf("--target %q is not a URL like http://127.0.0.1:8080", f.target))
		}
		if !f.allowRemote && !isLoopback(u.Hostname()) {
			return fail(fmt.Sprintf("--target %s is not on loopback: fuzzing another host needs --allow-remote", f.target))
		}
		fixedAddr = u.Host
		if u.Port() == "" {
			fixedAddr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	start := func(ctx context.Context, w io.Writer) (*probes.Child, error) {
		c, err := startCommand(ctx, argv, fixedAddr, probes.ChildSpec{Wait: f.startTimeout, MemLimit: memLimit, Stderr: w})
		if err != nil {
			return nil, fmt.Errorf("--cmd: %v", err)
		}
		return c, nil
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
	return fuzz.Options{Templates: []*fuzz.Template{t}, Header: header, Start: start},
		report.FuzzSetting{Server: server, ReproBase: base, Header: shown}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
