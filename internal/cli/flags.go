package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
)

// The flag groups: each is declared once and registered by every command
// that takes it, with the defaults that command needs; each validates
// itself the same way wherever it is used.

// targetFlags say which server to load: --target, or the fixture probe
// starts (its mode, size and key).
type targetFlags struct {
	target, fixtureMode, key, file string
	notes                          int
	synthetic, pin                 bool
	http2, insecure                bool // --http2: h2c for http://, TLS with ALPN h2 for https://
	streams                        int  // with --http2: clients' streams a connection carries
	h2Known                        bool // the command loads with probes' engine, which speaks HTTP/2
}

// register adds the group's flags; fixtureOnly keeps to the fixture's size
// and the key (probe ab starts both versions itself).
func (f *targetFlags) register(fs *flag.FlagSet, fixtureOnly bool) {
	f.fixtureMode = "per-request"
	fs.IntVar(&f.notes, "notes", 2000, "notes in the started fixture's vault")
	fs.StringVar(&f.key, "key", "", "send Authorization: Bearer KEY (the fixture's keyed class sees private notes)")
	if fixtureOnly {
		return
	}
	fs.StringVar(&f.target, "target", "", "URL of the server to load (default: start the reference fixture as a child process)")
	registerFixtureMode(fs, &f.fixtureMode)
	fs.BoolVar(&f.synthetic, "synthetic", false, "the started fixture uses 500-byte notes")
	fs.BoolVar(&f.pin, "pin", false, "put the started fixture and probe on different CPUs")
	fs.StringVar(&f.file, "file", "", "a target file (probe.jsonnet, see probe init) that describes the server's microloads")
}

// registerHTTP2 adds --http2, --streams and --insecure: the commands whose
// load is probes' engine (microloads, http, all, ramp).
func (f *targetFlags) registerHTTP2(fs *flag.FlagSet) {
	f.h2Known = true
	fs.BoolVar(&f.http2, "http2", false, "load over HTTP/2: h2c with prior knowledge for an http:// target, TLS with ALPN h2 for https://")
	fs.IntVar(&f.streams, "streams", 1, "with --http2: the clients' streams one connection carries at once (connections = clients / streams)")
	fs.BoolVar(&f.insecure, "insecure", false, "with --http2 and an https:// target: accept any certificate (a test server's own)")
}

func (f *targetFlags) validate() error {
	if f.notes <= 0 {
		return usageError{"--notes must be positive"}
	}
	if err := validFixtureMode(f.fixtureMode); err != nil {
		return err
	}
	if f.target != "" {
		u, err := parseTarget(f.target)
		if err != nil {
			return err
		}
		if u.Scheme == "https" && !f.http2 {
			msg := "--target " + f.target + ": an https:// target is loaded over HTTP/2 only: add --http2"
			if !f.h2Known {
				msg = "--target " + f.target + ": only http:// targets can be loaded by this command"
			}
			return usageError{msg}
		}
	}
	switch {
	case !f.h2Known:
	case f.streams < 1 || f.streams > 1000:
		return usageError{fmt.Sprintf("--streams %d: want 1 up to 1000", f.streams)}
	case f.streams > 1 && !f.http2:
		return usageError{"--streams needs --http2 (an HTTP/1.1 connection carries one request at a time)"}
	case f.insecure && !(f.http2 && strings.HasPrefix(f.target, "https://")):
		return usageError{"--insecure applies to an https:// --target with --http2"}
	}
	return nil
}

// http2Of is the target's HTTP/2 settings; nil without --http2.
func (f *targetFlags) http2Of() *probes.HTTP2 {
	if !f.http2 {
		return nil
	}
	return &probes.HTTP2{Streams: f.streams, Insecure: f.insecure}
}

// header is what every request carries for the target's access class.
func (f *targetFlags) header() []h1.Field {
	if f.key == "" {
		return nil
	}
	return []h1.Field{{Name: "Authorization", Value: "Bearer " + f.key}}
}

// parseTarget reads --target: an http:// URL with a host.
func parseTarget(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, usageError{fmt.Sprintf("--target %q is not a URL like http://127.0.0.1:8080", s)}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, usageError{fmt.Sprintf("--target %q: only http:// (and https:// with --http2) targets can be loaded", s)}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// loadDefaults are a command's defaults of the load group.
type loadDefaults struct {
	duration, warmup time.Duration
	durationHelp     string
	timeout          time.Duration
	timeoutHelp      string
	concurrency      int
	search           bool // a fuzz search: no warm-up and no rate
	settle           bool // probe all: --settle, the wait for a quiet target
	auto             bool // --concurrency auto is known (the load commands)
	shard            bool // --shard, --shards and --run-id (the load commands)
}

// loadFlags say how hard and how long to load.
type loadFlags struct {
	duration, warmup, timeout time.Duration
	concurrency               int
	autoConcurrency           bool // --concurrency auto: a short ramp chooses concurrency
	autoKnown                 bool // the command can choose its clients
	rate                      float64
	maxBody, replyMemory      byteSize
	settle                    time.Duration // the longest wait for a quiet target (probe all)
	shard                     shardFlags    // this generator's part of a load across machines (shard.go)
}

func (f *loadFlags) register(fs *flag.FlagSet, d loadDefaults) {
	if d.durationHelp == "" {
		d.durationHelp = "measured time per microload"
	}
	if d.timeoutHelp == "" {
		d.timeoutHelp = "longest wait for one reply"
	}
	fs.DurationVar(&f.duration, "duration", d.duration, d.durationHelp)
	registerTimeout(fs, &f.timeout, d.timeout, d.timeoutHelp)
	f.concurrency, f.autoKnown = d.concurrency, d.auto
	fs.Var(&concurrencyFlag{n: &f.concurrency, auto: &f.autoConcurrency}, "concurrency",
		"virtual clients (`N` or auto), one kept-alive connection each; auto: a short ramp before the run finds where throughput stops growing")
	registerMaxBody(fs, &f.maxBody)
	f.replyMemory = h1.DefaultBudget
	fs.Var(&f.replyMemory, "reply-memory", "what all clients may hold for replies at once, beyond 1 MiB each (a reply beyond it is an error of its request)")
	if !d.search {
		fs.DurationVar(&f.warmup, "warmup", d.warmup, "load before the measured time, not recorded")
		fs.Float64Var(&f.rate, "rate", 0, "open loop: requests per second (latency from the intended send time)")
	}
	if d.settle {
		fs.DurationVar(&f.settle, "settle", time.Minute, "before each microload, wait up to this long for the target to be as quiet as at the start (0: no wait)")
	}
	if d.shard {
		f.shard.register(fs)
	}
}

// concurrencyFlag is --concurrency: a number of clients, or auto.
type concurrencyFlag struct {
	n    *int
	auto *bool
}

func (c *concurrencyFlag) String() string {
	switch {
	case c.n == nil:
		return ""
	case *c.auto:
		return "auto"
	}
	return strconv.Itoa(*c.n)
}

func (c *concurrencyFlag) Set(s string) error {
	if s == "auto" {
		*c.auto = true
		return nil
	}
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errors.New("want a number of clients or auto")
	}
	*c.n, *c.auto = int(n), false
	return nil
}

// The bounds of the load flags: beyond them a value is a typo or an attack
// on the report (a rate of NaN made a report.json of an empty line).
const (
	maxDuration    = 24 * time.Hour
	minRate        = 0.01 // one request in 100 s
	maxRate        = 10_000_000
	maxConcurrency = 100_000
	minMaxBody     = 1 << 10
)

func (f *loadFlags) validate() error {
	switch {
	case f.duration <= 0 || f.duration > maxDuration:
		return usageError{fmt.Sprintf("--duration %v: want more than 0 and at most %v", f.duration, maxDuration)}
	case f.warmup < 0 || f.warmup > maxDuration:
		return usageError{fmt.Sprintf("--warmup %v: want 0 or more and at most %v", f.warmup, maxDuration)}
	case f.autoConcurrency && !f.autoKnown:
		return usageError{"--concurrency auto: only probe <microload>, probe all and probe http choose their clients; give a number"}
	case f.concurrency <= 0 || f.concurrency > maxConcurrency:
		return usageError{fmt.Sprintf("--concurrency %d: want 1 to %d", f.concurrency, maxConcurrency)}
	case math.IsNaN(f.rate) || math.IsInf(f.rate, 0) || f.rate < 0 || f.rate > 0 && (f.rate < minRate || f.rate > maxRate):
		return usageError{fmt.Sprintf("--rate %v: want 0 (closed loop) or %g to %g requests per second", f.rate, minRate, float64(maxRate))}
	case validTimeout(f.timeout) != nil:
		return validTimeout(f.timeout)
	case validMaxBody(f.maxBody) != nil:
		return validMaxBody(f.maxBody)
	case f.replyMemory < minMaxBody:
		return usageError{fmt.Sprintf("--reply-memory %v: want at least 1 KiB", f.replyMemory)}
	case checkSettle(f.settle) != nil:
		return checkSettle(f.settle)
	}
	return f.shard.validate(f)
}

// limitMemory sets the Go runtime's soft memory limit (unless GOMEMLIMIT
// does) to what the load may hold: the reply budget, each client's
// allowances, and room for the rest. Reply buffers are dropped after each
// reply; without a limit the collector lets such garbage grow to twice
// the live heap, and a hostile target's endless replies took probe past
// 800 MB.
func (f *loadFlags) limitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	clients := f.concurrency
	if f.autoConcurrency {
		clients = max(clients, pipeline.AutoClientsCap())
	}
	debug.SetMemoryLimit(int64(f.replyMemory) + int64(clients)*2*h1.Allowance + 64<<20)
}

// options are the load engine's options of these flags.
func (f *loadFlags) options() probes.LoadOptions {
	return probes.LoadOptions{Concurrency: f.concurrency, Rate: f.rate, Duration: f.duration, Warmup: f.warmup, Timeout: f.timeout,
		MaxBody: int(f.maxBody), ReplyMemory: int64(f.replyMemory)}
}

// profileFlags turn on continuous profiling and say where the profiles are
// and which rules read them.
type profileFlags struct {
	profile, wall  bool
	overhead       bool // --profiling-overhead
	pprof, rules   string
	maxProfile     byteSize
	experiment     bool
	experimentTime time.Duration
}

func (f *profileFlags) register(fs *flag.FlagSet, profileByDefault bool, help string) {
	f.registerWall(fs, profileByDefault, help, false)
}

// registerWall is register with --wall's default: on only where the
// wall-clock profile is read (a ramp's windows past the knee). fgprof
// walks every goroutine's stack 100 times a second in the target, the
// costliest part of profiling; a microload's report reads nothing of it.
func (f *profileFlags) registerWall(fs *flag.FlagSet, profileByDefault bool, help string, wall bool) {
	fs.BoolVar(&f.profile, "profile", profileByDefault, help)
	fs.StringVar(&f.pprof, "pprof", "", "URL of the target's /debug/pprof/ (default: TARGET/debug/pprof/)")
	fs.StringVar(&f.rules, "rules", "", "more analyzer rules, a JSON or Jsonnet file (see analyzers/rules.json)")
	wallHelp := "with --profile: also take fgprof's wall-clock profile into wall.pb.gz (it costs the target the most of profiling, and this report reads nothing of it)"
	if wall {
		wallHelp = "with --profile: also take fgprof's wall-clock profile of each window (what requests waited on past the knee)"
	}
	fs.BoolVar(&f.wall, "wall", wall, wallHelp)
	fs.BoolVar(&f.overhead, "profiling-overhead", false, "with --profile (microloads, all, http): after each run, legs of it with and without profiling, taking turns, say what profiling cost the target's throughput (profiling_overhead)")
	fs.BoolVar(&f.experiment, "experiment", true, "with --profile (probe all, http and the microload commands; not ab or scale): after a run whose findings rest on thin evidence, "+
		"a short confirming run that varies the request and compares each finding's CPU per request (README, The experiment)")
	fs.DurationVar(&f.experimentTime, "experiment-time", 12*time.Second, "with --experiment: the most one microload's experiment may take")
	f.registerMaxProfile(fs)
}

// experimentBudget is the time the experiment may take after each run
// (0: no experiment).
func (f *profileFlags) experimentBudget() time.Duration {
	if !f.profile || !f.experiment {
		return 0
	}
	return f.experimentTime
}

// registerMaxProfile adds --max-profile (every command that reads profiles).
func (f *profileFlags) registerMaxProfile(fs *flag.FlagSet) {
	f.maxProfile = pprofio.DefaultLimit
	fs.Var(&f.maxProfile, "max-profile", "largest profile, as read and as decompressed (an endless reply or a gzip bomb is an error)")
}

func (f *profileFlags) validate() error {
	if f.experiment && f.experimentTime < pipeline.MinExperimentTime {
		return usageError{fmt.Sprintf("--experiment-time %s: want at least %s (or --experiment=false)", f.experimentTime, pipeline.MinExperimentTime)}
	}
	if f.maxProfile < minMaxBody {
		return usageError{fmt.Sprintf("--max-profile %v: want at least 1 KiB", f.maxProfile)}
	}
	if f.pprof != "" {
		if u, err := url.Parse(f.pprof); err != nil || u.Host == "" {
			return usageError{fmt.Sprintf("--pprof %q is not a URL", f.pprof)}
		}
	}
	return nil
}

// loadRules is the analyzers' catalog, with --rules FILE's rules added
// (pipeline.LoadRules); a file that cannot be read or used is a usage error.
func (f *profileFlags) loadRules(ctx context.Context) ([]pipeline.Rule, error) {
	if f.rules == "" {
		return pipeline.LoadRules("", nil)
	}
	src, err := readJSONOrJsonnet(ctx, f.rules)
	if err != nil {
		return nil, usageError{"--rules " + err.Error()}
	}
	rules, err := pipeline.LoadRules(f.rules, src)
	if err != nil {
		return nil, usageError{"--rules " + err.Error()}
	}
	return rules, nil
}

// options say where target's profiles are, for a run of duration d; nil
// without --profile. An explicit --pprof applies to a target given by URL.
func (f *profileFlags) options(target *url.URL, d time.Duration) *probes.ProfileOptions {
	if !f.profile {
		return nil
	}
	o := &probes.ProfileOptions{PprofURL: target.JoinPath("/debug/pprof/"), FgprofURL: target.JoinPath("/debug/fgprof"), MaxProfile: int64(f.maxProfile)}
	if f.pprof != "" {
		u, _ := url.Parse(f.pprof) // checked by validate
		if !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
		}
		o.PprofURL = u
		o.FgprofURL = u.JoinPath("../fgprof")
	}
	if !f.wall {
		o.FgprofURL = nil
	}
	// Windows short enough to show change, long enough to hold samples.
	o.Window = min(5*time.Second, max(time.Second, d/2))
	return o
}

// byteSize is a flag of bytes: 65536, 64KiB, 64MiB, 1GiB (or kB, MB, GB).
type byteSize int64

func (b byteSize) String() string { return humanize.IBytes(uint64(b)) }

func (b *byteSize) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	if err != nil || n > 1<<40 {
		return fmt.Errorf("%q is not a size like 64MiB", s)
	}
	*b = byteSize(n)
	return nil
}

// outputFlags say where the report goes, and what makes the run fail.
type outputFlags struct {
	out         string
	json, force bool
	failOn      []string
	name        string // the default folder's prefix
	dir         string // the folder claimed for this run
}

func (f *outputFlags) register(fs *flag.FlagSet, defaultName string) {
	f.name = defaultName
	fs.StringVar(&f.out, "out", "", "report folder (default probe-out/"+defaultName+"-<time>/); it must be new or empty")
	fs.BoolVar(&f.force, "force", false, "use a non-empty --out: clear probe's files from it first")
	fs.BoolVar(&f.json, "json", false, "print report.json on stdout and nothing else there")
}

// claim picks the report folder and makes it ready, before the run.
func (f *outputFlags) claim() (string, error) {
	f.dir = outDir(f.out, f.name)
	return f.dir, claimOut(f.dir, f.force)
}

// registerGates adds --fail-on (commands whose report it can judge).
func (f *outputFlags) registerGates(fs *flag.FlagSet, examples string) {
	fs.Func("fail-on", "exit 1 when the run breaks this threshold (repeatable): "+examples, func(s string) error {
		f.failOn = append(f.failOn, s)
		return nil
	})
}

// requestFlags describe one HTTP request (probe http, probe ab http, and
// probe fuzz http, whose path and body are templates).
type requestFlags struct {
	path, method, body, param string
	headers                   []string
}

func (f *requestFlags) register(fs *flag.FlagSet, pathHelp, bodyHelp, methodDefault string, withParam bool) {
	fs.StringVar(&f.path, "path", "", pathHelp)
	fs.StringVar(&f.method, "method", methodDefault, "HTTP method")
	fs.StringVar(&f.body, "body", "", bodyHelp)
	fs.Func("header", "request header Name:value (repeatable)", func(s string) error {
		f.headers = append(f.headers, s)
		return nil
	})
	if withParam {
		fs.StringVar(&f.param, "param", "", "vary a query parameter: name=v1,v2,… (each request puts the next value in)")
	}
}

// headerFields parses --header values.
func (f *requestFlags) headerFields() ([]h1.Field, error) {
	var out []h1.Field
	for _, h := range f.headers {
		field, err := probes.ParseHeader(h)
		if err != nil {
			return nil, usageError{"--header " + err.Error()}
		}
		out = append(out, field)
	}
	return out, nil
}

// httpMicroload is probe http's microload of these flags.
func (f *requestFlags) httpMicroload() (*probes.HTTP, error) {
	if f.path == "" {
		return nil, usageError{"http: --path is required"}
	}
	if !strings.HasPrefix(f.path, "/") {
		return nil, usageError{fmt.Sprintf("--path %q must start with /", f.path)}
	}
	if _, err := url.ParseRequestURI(f.path); err != nil {
		return nil, usageError{fmt.Sprintf("--path %q: %v", f.path, err)}
	}
	if reason := h1.CheckTarget(f.path); reason != "" {
		return nil, usageError{fmt.Sprintf("--path %q %s: escape it (%%20 for a space)", f.path, reason)}
	}
	l := &probes.HTTP{Method: strings.ToUpper(f.method), Path: f.path}
	if f.body != "" {
		l.Body = []byte(f.body)
	}
	var err error
	if l.Header, err = f.headerFields(); err != nil {
		return nil, err
	}
	if f.param != "" {
		if l.Param, l.Values, err = probes.ParseParam(f.param); err != nil {
			return nil, usageError{"--param " + err.Error()}
		}
	}
	return l, nil
}

// Flags that several groups or commands take are declared and validated
// here once: --fixture-mode, --timeout and --max-body mean the same in
// every command that has them.

// registerFixtureMode adds --fixture-mode (the started fixture's mode).
func registerFixtureMode(fs *flag.FlagSet, mode *string) {
	*mode = "per-request"
	fs.StringVar(mode, "fixture-mode", *mode, "mode of the started fixture: per-request or load-time")
}

func validFixtureMode(mode string) error {
	if mode != "per-request" && mode != "load-time" {
		return usageError{fmt.Sprintf("--fixture-mode %q: want per-request or load-time", mode)}
	}
	return nil
}

// registerTimeout adds --timeout, the longest wait for one reply.
func registerTimeout(fs *flag.FlagSet, timeout *time.Duration, def time.Duration, help string) {
	if help == "" {
		help = "longest wait for one reply"
	}
	fs.DurationVar(timeout, "timeout", def, help)
}

func validTimeout(timeout time.Duration) error {
	if timeout <= 0 || timeout > maxDuration {
		return usageError{fmt.Sprintf("--timeout %v: want more than 0 and at most %v", timeout, maxDuration)}
	}
	return nil
}

// registerMaxBody adds --max-body, the largest reply body.
func registerMaxBody(fs *flag.FlagSet, maxBody *byteSize) {
	*maxBody = h1.DefaultMaxBody
	fs.Var(maxBody, "max-body", "largest reply body, as received and as decoded (a larger one is an error of its request)")
}

func validMaxBody(maxBody byteSize) error {
	if maxBody < minMaxBody {
		return usageError{fmt.Sprintf("--max-body %v: want at least 1 KiB", maxBody)}
	}
	return nil
}

// checkSettle is the bound of a --settle.
func checkSettle(d time.Duration) error {
	if d < 0 || d > maxDuration {
		return usageError{fmt.Sprintf("--settle %v: want 0 (no wait) up to %v", d, maxDuration)}
	}
	return nil
}
