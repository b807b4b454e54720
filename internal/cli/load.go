package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// loadCommand is `probe <microload>`, `probe all` and `probe http`.
type loadCommand struct {
	name    string
	target  targetFlags
	load    loadFlags
	profile profileFlags
	output  outputFlags
	request requestFlags   // probe http
	grpc    grpcFlags      // probe grpc
	shape   microloadFlags // a named microload's endpoints
	writes  writeFlags     // reads during writes

	fleet productionFlags // probe all --production
}

func microloadCommand(name string) func(fs *flag.FlagSet) runner {
	return func(fs *flag.FlagSet) runner { return newLoadCommand(fs, name) }
}

func allCommand(fs *flag.FlagSet) runner  { return newLoadCommand(fs, "all") }
func httpCommand(fs *flag.FlagSet) runner { return newLoadCommand(fs, "http") }

func newLoadCommand(fs *flag.FlagSet, name string) runner {
	c := &loadCommand{name: name}
	c.target.register(fs, false)
	c.target.registerHTTP2(fs)
	c.load.register(fs, loadDefaults{duration: 10 * time.Second, warmup: 2 * time.Second, timeout: 30 * time.Second, concurrency: 32,
		settle: name == "all", auto: true, shard: true})
	c.profile.register(fs, false, "profile the target while the load runs, and name the per-request work that could move to load time")
	c.output.register(fs, name)
	c.output.registerGates(fs, "p99_ms>250, errors>0.1%, rps<100, finding:load-time, finding:repeated-gzip>10%")
	if name == "http" {
		c.request.register(fs, "path and query to request, e.g. /api/items?page=1", "request body", "GET", true)
	}
	if name == "grpc" {
		c.grpc.register(fs)
	}
	c.shape.register(fs, name)
	if name != "all" {
		c.writes.register(fs)
	} else {
		c.fleet.register(fs, "production", "with --profile: weigh each finding by its share of this fleet's CPU: pyroscope://HOST:PORT or parca://HOST:PORT",
			24*time.Hour, "production-")
	}
	return c.run
}

// failedChecks: the run completed but replies failed their checks, or it
// ended early.
type failedChecks struct {
	requests, errors int64
	lost             int // writes never seen (--during-writes)
	ended, dir       string
}

func (e failedChecks) Error() string {
	switch {
	case e.ended != "":
		return fmt.Sprintf("the run ended early (%s); what was measured is in %s", e.ended, e.dir)
	case e.errors == 0 && e.lost > 0:
		return fmt.Sprintf("%d writes never showed within --freshness-timeout (lost writes); see %s", e.lost, filepath.Join(e.dir, "report.md"))
	case e.lost > 0:
		return fmt.Sprintf("%d of %d requests failed their checks and %d writes never showed; see %s", e.errors, e.requests, e.lost, filepath.Join(e.dir, "report.md"))
	}
	return fmt.Sprintf("%d of %d requests failed their checks; see %s", e.errors, e.requests, filepath.Join(e.dir, "report.md"))
}

func (c *loadCommand) run(ctx context.Context, s streams, words []string) error {
	if err := noWords(c.name, words); err != nil {
		return err
	}
	if c.name == "grpc" {
		c.grpc.forFixture(c.target.target == "" && c.target.file == "")
		c.target.http2 = true // gRPC is HTTP/2's
	}
	var fleet *fleetProfile
	sess, err := begin(ctx, s, start{
		checks: []error{c.target.validate(), c.load.validate(), c.profile.validate(), c.writes.validate(c.load), c.checkShard()},
		gates:  "run", output: &c.output, load: &c.load, profile: &c.profile,
		before: func() (err error) { fleet, err = c.fleet.fetchFleet(ctx, &c.profile); return err },
	})
	if err != nil {
		return err
	}
	dir := sess.dir
	file, err := readFileFlag(ctx, &c.target, &c.profile)
	if err != nil {
		return err
	}
	if file == nil && c.name != "all" && c.name != "http" && c.name != "grpc" && flagHints[c.name] == "" {
		return usageError{fmt.Sprintf("unknown command %q (see probe --help)", c.name)}
	}
	// The microloads are built before the target is opened: a bad flag
	// must not wait for a fixture to load.
	loads, err := c.microloads(c.target.target == "", file)
	if err != nil {
		return err
	}
	target, warnings, cleanup, err := openTarget(ctx, &c.target, file, s.stderr)
	if err != nil {
		return err
	}
	defer cleanup()

	p := pipelineOf(sess.rules, newProgressLine(s.stderr)).WithExperiment(c.profile.experimentBudget())
	o := c.load.options()
	o.Profile = c.profile.options(target.URL, c.load.duration)
	o = c.shardOptions(s.stderr, o)
	var reports []*report.RunReport
	var skipped []report.Skipped
	// probe all waits for a quiet target before each microload but the
	// first: a slow server may still be finishing what the last abandoned.
	var settler *pipeline.Settler
	var skipWarnings []probes.Warning // a skipped microload's wait that did not end quiet
	if len(loads) > 1 && c.load.settle > 0 {
		settler = pipeline.NewSettler(target, c.load.settle)
		settler.Baseline(ctx)
	}
	for i, ml := range loads {
		if ctx.Err() != nil {
			break
		}
		var settle *report.Settle
		if settler != nil && i > 0 {
			settler.Busy = func() {
				fmt.Fprintf(s.stderr, "probe: the target is busy: waiting (up to --settle %s) for it to be quiet before %s…\n", c.load.settle, ml.Name())
			}
			settle = settler.Wait(ctx)
			if ctx.Err() != nil {
				break
			}
			if settle.WaitedS >= 1 || !settle.Quiet {
				fmt.Fprintf(s.stderr, "probe: %s after %.0f s\n", quietWord(settle), settle.WaitedS)
			}
		}
		mo := o
		chose, err := c.chooseClients(ctx, s, p, ml, target, o)
		if chose != nil {
			mo.Concurrency = chose.Chosen
		}
		var wl *probes.WriteLoad
		if err == nil && c.writes.rate > 0 {
			wl = c.writes.writeLoad(ctx, target, c.target.key, target.Child != nil, c.load.timeout)
			mo = withWrites(mo, wl)
		}
		var rep *report.RunReport
		var run *probes.Run
		if err == nil {
			rep, run, err = p.Measure(ctx, ml.Name(), c.load.shard.split(ml), target, mo)
		}
		if err == nil {
			err = c.attachShard(rep, run, mo)
		}
		if err == nil && c.profile.overhead && mo.Profile != nil && ctx.Err() == nil {
			leg := max(2*time.Second, min(5*time.Second, c.load.duration/2))
			fmt.Fprintf(s.stderr, "probe: what profiling costs %s: 2 rounds of %v without and with…\n", ml.Name(), leg)
			rep.ProfilingOverhead, err = p.ProfilingOverhead(ctx, ml, target, mo, leg, 2)
		}
		if wl != nil {
			wl.Cleanup(context.WithoutCancel(ctx))
		}
		if err == nil && wl != nil {
			rep.Writes = pipeline.WritesReport(run, wl, sess.rules)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			err = needsFlag(ml.Name(), err)
			if why := pipeline.BusyReason(settle); why != "" {
				err = fmt.Errorf("%w; %s", err, why)
			}
			if c.name != "all" {
				return fmt.Errorf("target %s: %v", target.URL, err)
			}
			// probe all runs what it can find, and says what it skipped.
			why := textline.Of(err.Error(), maxErrorLine)
			fmt.Fprintf(s.stderr, "probe: skipping %s: %s\n", ml.Name(), why)
			skipped = append(skipped, report.Skipped{Microload: ml.Name(), Reason: why})
			if w, ok := pipeline.SettleWarning(settle); ok {
				skipWarnings = append(skipWarnings, probes.Warning{Kind: w.Kind, Message: ml.Name() + ": " + w.Message})
			}
			continue
		}
		for _, w := range warnings {
			rep.Warn(w.Kind, w.Message)
		}
		rep.Settle, rep.AutoClients = settle, chose
		if g, ok := ml.(*probes.GRPC); ok && g.StreamNote() != "" {
			rep.Warn("grpc-stream", g.StreamNote())
		}
		if w, ok := pipeline.SettleWarning(settle); ok {
			rep.Warn(w.Kind, w.Message)
		}
		reports = append(reports, rep)
		if run.Ended != "" && !errors.Is(ctx.Err(), context.Canceled) {
			break // the target died: the next microload has nothing to load
		}
	}
	if len(reports) == 0 && len(skipped) == 0 {
		return errors.New("interrupted before anything was measured")
	}
	var doc report.Document
	var failed bool
	var requests, errs int64
	var ended string
	var lost int
	fleet.weigh(reports)
	verdicts := sess.judgeRuns(reports)
	if c.name == "all" {
		suite := report.NewSuite(target.URL.String(), reports)
		suite.Skipped, suite.Thresholds = skipped, verdicts
		for _, w := range skipWarnings {
			suite.Warnings = probes.AddWarning(suite.Warnings, w.Kind, w.Message)
		}
		doc, failed = suite, suite.Failed()
		requests, errs, ended = suite.Latency.Requests, suite.Latency.Errors, suite.Ended
	} else {
		reports[0].Thresholds = verdicts
		doc, failed = reports[0], reports[0].Failed()
		requests, errs, ended = reports[0].Latency.Requests, reports[0].Latency.Errors, reports[0].Ended
	}
	for _, r := range reports {
		lost += r.LostWrites()
	}
	var failure error
	switch {
	case len(reports) == 0:
		failure = fmt.Errorf("nothing could be measured (%d microloads skipped: %s); see %s", len(skipped), skipped[0].Reason, filepath.Join(dir, "report.md"))
	case failed:
		failure = failedChecks{requests: requests, errors: errs, lost: lost, ended: ended, dir: dir}
	}
	return sess.finish(doc, failure)
}

// chooseClients runs the ramp of --concurrency auto before ml's run (nil:
// the flag's clients stand). probe all uses it unasked for a microload
// whose first reply, sent alone, takes over a second: 32 clients of a
// 3 CPU-s sitemap time out.
func (c *loadCommand) chooseClients(ctx context.Context, s streams, p *pipeline.Pipeline, ml probes.Microload,
	t *probes.Target, o probes.LoadOptions) (*report.Concurrency, error) {
	forced := ""
	if !c.load.autoConcurrency {
		if c.name != "all" || c.load.shard.on { // a shard keeps its part of the fleet's clients
			return nil, nil
		}
		slow, took, err := p.FirstReplySlow(ctx, ml, t, o)
		if err != nil || !slow {
			return nil, err
		}
		forced = fmt.Sprintf("its first reply took %v (over 1 s)", took.Round(time.Millisecond))
		fmt.Fprintf(s.stderr, "probe: %s: %s: choosing the clients (--concurrency auto)…\n", ml.Name(), forced)
	} else {
		fmt.Fprintf(s.stderr, "probe: %s: --concurrency auto: a short ramp finds the clients…\n", ml.Name())
	}
	chose, err := p.AutoConcurrency(ctx, ml, t, o)
	if err != nil {
		return nil, fmt.Errorf("--concurrency auto: %w", err)
	}
	chose.Forced = forced
	fmt.Fprintf(s.stderr, "probe: %s: %d clients: %s\n", ml.Name(), chose.Chosen, chose.Why)
	return chose, nil
}

// quietWord says how a wait for a quiet target ended.
func quietWord(st *report.Settle) string {
	switch {
	case st.Quiet:
		return "the target was quiet"
	case st.JudgedBy == "none":
		return "quiet could not be judged (" + st.Note + ")"
	}
	return "the target was still busy; going on (a target-busy warning)"
}

// microloads are the command's: one by name, every one for all, or the
// request of probe http; fixture says the target is the fixture probe
// started (its note queries are known).
func (c *loadCommand) microloads(fixture bool, file *targetFile) ([]probes.Microload, error) {
	if file != nil && c.name != "http" && c.name != "grpc" {
		var out []probes.Microload
		for _, m := range file.microloads {
			if c.name == "all" || m.name == c.name {
				ml, err := m.microload()
				if err != nil {
					return nil, err
				}
				out = append(out, ml)
			}
		}
		for _, m := range file.microloads { // probe search --file: the file's search
			if len(out) == 0 && m.use == c.name {
				ml, err := m.microload()
				if err != nil {
					return nil, err
				}
				out = append(out, ml)
			}
		}
		if len(out) == 0 {
			return nil, usageError{fmt.Sprintf("--file %s has no microload named %q", file.path, c.name)}
		}
		return out, nil
	}
	switch c.name {
	case "all":
		var out []probes.Microload
		for _, n := range fixtureMicroloads {
			ml, err := namedMicroload(n, fixture)
			if err != nil {
				return nil, err
			}
			out = append(out, ml)
		}
		return out, nil
	case "http":
		ml, err := c.request.httpMicroload()
		if err != nil {
			return nil, err
		}
		return []probes.Microload{ml}, nil
	case "grpc":
		ml, err := c.grpc.microload()
		if err != nil {
			return nil, err
		}
		return []probes.Microload{ml}, nil
	}
	ml, err := c.shape.build(c.name, fixture)
	if err != nil {
		return nil, err
	}
	return []probes.Microload{ml}, nil
}

// readFileFlag reads --file (nil without it): its target and pprof URL
// stand in for --target and --pprof when those are not given.
func readFileFlag(ctx context.Context, t *targetFlags, p *profileFlags) (*targetFile, error) {
	if t.file == "" {
		return nil, nil
	}
	file, err := readTargetFile(ctx, t.file)
	if err != nil {
		return nil, err
	}
	if t.target == "" && file.target != "" {
		if _, err := parseTarget(file.target); err != nil {
			return nil, usageError{fmt.Sprintf("--file %s: target: %v", t.file, err)}
		}
		t.target = file.target
	}
	if p.pprof == "" {
		p.pprof = file.pprof
	}
	return file, nil
}

// answersHTTP1 says whether the server at addr answers an HTTP/1.1
// request (after it refused HTTP/2 with prior knowledge).
func answersHTTP1(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "HEAD / HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n"); err != nil {
		return false
	}
	head := make([]byte, 7)
	_, err = io.ReadFull(conn, head)
	return err == nil && string(head) == "HTTP/1."
}

// insecureHint names --insecure when a TLS certificate did not verify.
func insecureHint(err error) string {
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) || strings.Contains(err.Error(), "failed to verify certificate") {
		return " (--insecure accepts a certificate that does not verify)"
	}
	return ""
}

// openTarget parses --target, or starts the fixture as a child process;
// the headers of file (nil: none) go before --header's.
func openTarget(ctx context.Context, f *targetFlags, file *targetFile, stderr io.Writer) (*probes.Target, []probes.Warning, func(), error) {
	header := f.header()
	if file != nil {
		header = append(append(header[:0:0], file.headers...), header...) // a new array: file's is kept
	}
	var warnings []probes.Warning
	if f.target != "" {
		u, err := parseTarget(f.target)
		if err != nil {
			return nil, nil, nil, err
		}
		if f.pin {
			warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin places only a fixture that probe starts"})
		}
		t := &probes.Target{URL: u, Header: header, HTTP2: f.http2Of()}
		// An unreachable target is one line, not a run of failed requests.
		conn, err := net.DialTimeout("tcp", t.Addr(), 5*time.Second)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("target %s is unreachable: %v", u, err)
		}
		conn.Close()
		if err := probes.CheckHTTP2(t, 10*time.Second); err != nil {
			if u.Scheme == "http" && answersHTTP1(t.Addr()) {
				return nil, nil, nil, fmt.Errorf("target %s answers HTTP/1.1, not HTTP/2 with prior knowledge (h2c): "+
					"--http2 and gRPC need a server that speaks h2c", u)
			}
			return nil, nil, nil, fmt.Errorf("target %s does not answer over %s: %v%s", u, t.Protocol(), err, insecureHint(err))
		}
		return t, warnings, func() {}, nil
	}
	fmt.Fprintf(stderr, "probe: starting the fixture (%s mode, %d notes)…\n", f.fixtureMode, f.notes)
	child, err := startFixture(ctx, fixtureStart{mode: f.fixtureMode, notes: f.notes, synthetic: f.synthetic, key: f.key})
	if err != nil {
		return nil, nil, nil, err
	}
	u, _ := parseTarget(child.URL)
	if f.pin {
		ok, err := probes.Pin(child.PID())
		switch {
		case err != nil:
			warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin: " + err.Error()})
		case !ok:
			warnings = append(warnings, probes.Warning{Kind: "not-pinned", Message: "--pin needs two or more CPUs"})
		}
	}
	t := &probes.Target{URL: u, Header: header, Child: child, HTTP2: f.http2Of()}
	if err := probes.CheckHTTP2(t, 10*time.Second); err != nil {
		child.Stop()
		return nil, nil, nil, fmt.Errorf("the fixture does not answer over %s: %v", t.Protocol(), err)
	}
	return t, warnings, func() { child.Stop() }, nil
}
