package shared

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
	"github.com/probehq/probe/target"
)

// The flag groups: each is declared once and registered by every command
// that takes it, with the defaults that command needs; each validates
// itself the same way wherever it is used.

// targetFlags say which server to load: --target, or the fixture probe
// starts (its mode, size and key).
type TargetFlags struct {
	Target, FixtureMode, Key, File string
	Notes                          int
	Synthetic, Pin                 bool
	HTTP2, insecure                bool // --http2: h2c for http://, TLS with ALPN h2 for https://
	streams                        int  // with --http2: clients' streams a connection carries
	h2Known                        bool // the command loads with probes' engine, which speaks HTTP/2
}

// TargetOptions shape the target group's flags.
type TargetOptions struct {
	// FixtureOnly keeps to the fixture's size and the key (probe ab
	// starts both versions itself).
	FixtureOnly bool
}

// Register adds the group's flags.
func (f *TargetFlags) Register(fs *flag.FlagSet, o TargetOptions) {
	f.FixtureMode = "per-request"
	fs.IntVar(&f.Notes, "notes", 2000, "notes in the started fixture's vault")
	fs.StringVar(&f.Key, "key", "", "send Authorization: Bearer KEY (the fixture's keyed class sees private notes)")
	if o.FixtureOnly {
		return
	}
	fs.StringVar(&f.Target, "target", "", "URL of the server to load (default: start the reference fixture as a child process)")
	RegisterFixtureMode(fs, &f.FixtureMode)
	fs.BoolVar(&f.Synthetic, "synthetic", false, "the started fixture uses 500-byte notes")
	fs.BoolVar(&f.Pin, "pin", false, "put the started fixture and probe on different CPUs")
	fs.StringVar(&f.File, "file", "", "a target file (probe.jsonnet, see probe init) that describes the server's microloads")
}

// registerHTTP2 adds --http2, --streams and --insecure: the commands whose
// load is probes' engine (microloads, http, all, ramp).
func (f *TargetFlags) RegisterHTTP2(fs *flag.FlagSet) {
	f.h2Known = true
	fs.BoolVar(&f.HTTP2, "http2", false, "load over HTTP/2: h2c with prior knowledge for an http:// target, TLS with ALPN h2 for https://")
	fs.IntVar(&f.streams, "streams", 1, "with --http2: the clients' streams one connection carries at once (connections "+
		"= clients / streams)")
	fs.BoolVar(&f.insecure, "insecure", false, "with --http2 and an https:// target: accept any certificate (a test server's own)")
}

func (f *TargetFlags) Validate() error {
	if f.Notes <= 0 {
		return UsageError{"--notes must be positive"}
	}
	if err := ValidFixtureMode(f.FixtureMode); err != nil {
		return err
	}
	if f.Target != "" {
		u, err := ParseTarget(f.Target)
		if err != nil {
			return err
		}
		if u.Scheme == "https" && !f.HTTP2 {
			msg := "--target " + f.Target + ": an https:// target is loaded over HTTP/2 only: add --http2"
			if !f.h2Known {
				msg = "--target " + f.Target + ": only http:// targets can be loaded by this command"
			}
			return UsageError{msg}
		}
	}
	switch {
	case !f.h2Known:
	case f.streams < 1 || f.streams > 1000:
		return UsageError{fmt.Sprintf("--streams %d: want 1 up to 1000", f.streams)}
	case f.streams > 1 && !f.HTTP2:
		return UsageError{"--streams needs --http2 (an HTTP/1.1 connection carries one request at a time)"}
	case f.insecure && !(f.HTTP2 && strings.HasPrefix(f.Target, "https://")):
		return UsageError{"--insecure applies to an https:// --target with --http2"}
	}
	return nil
}

// http2Of is the target's HTTP/2 settings; nil without --http2.
func (f *TargetFlags) HTTP2Of() *probes.HTTP2 {
	if !f.HTTP2 {
		return nil
	}
	return &probes.HTTP2{Streams: f.streams, Insecure: f.insecure}
}

// header is what every request carries for the target's access class.
func (f *TargetFlags) Header() []h1.Field {
	if f.Key == "" {
		return nil
	}
	return []h1.Field{{Name: "Authorization", Value: "Bearer " + f.Key}}
}

// parseTarget reads --target: an http:// URL with a host.
func ParseTarget(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, UsageError{fmt.Sprintf("--target %q is not a URL like http://127.0.0.1:8080", s)}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, UsageError{fmt.Sprintf("--target %q: only http:// (and https:// with --http2) targets can be loaded", s)}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// loadDefaults are a command's defaults of the load group.
type LoadDefaults struct {
	Duration, Warmup time.Duration
	DurationHelp     string
	Timeout          time.Duration
	TimeoutHelp      string
	Concurrency      int
	Search           bool // a fuzz search: no warm-up and no rate
	Settle           bool // probe all: --settle, the wait for a quiet target
	Auto             bool // --concurrency auto is known (the load commands)
	Shard            bool // --shard, --shards and --run-id (the load commands)
}

// loadFlags say how hard and how long to load.
type LoadFlags struct {
	Duration, warmup, Timeout time.Duration
	Concurrency               int
	AutoConcurrency           bool // --concurrency auto: a short ramp chooses concurrency
	ConcurrencyGiven          bool // --concurrency was on the command line (a number or auto)
	autoKnown                 bool // the command can choose its clients
	rate                      float64
	maxBody, replyMemory      ByteSize
	Settle                    time.Duration // the longest wait for a quiet target (probe all)
	Shard                     shardFlags    // this generator's part of a load across machines (shard.go)
}

func (f *LoadFlags) Register(fs *flag.FlagSet, d LoadDefaults) {
	if d.DurationHelp == "" {
		d.DurationHelp = "measured time per microload"
	}
	if d.TimeoutHelp == "" {
		d.TimeoutHelp = "longest wait for one reply"
	}
	fs.DurationVar(&f.Duration, "duration", d.Duration, d.DurationHelp)
	RegisterTimeout(fs, &f.Timeout, d.Timeout, d.TimeoutHelp)
	f.Concurrency, f.autoKnown = d.Concurrency, d.Auto
	fs.Var(&concurrencyFlag{n: &f.Concurrency, auto: &f.AutoConcurrency, given: &f.ConcurrencyGiven}, "concurrency",
		"virtual clients (`N` or auto), one kept-alive connection each; auto: a short ramp before the run finds where "+
			"throughput stops growing")
	RegisterMaxBody(fs, &f.maxBody)
	f.replyMemory = h1.DefaultBudget
	fs.Var(&f.replyMemory, "reply-memory", "what all clients may hold for replies at once, beyond 1 MiB each (a reply beyond it "+
		"is an error of its request)")
	if !d.Search {
		fs.DurationVar(&f.warmup, "warmup", d.Warmup, "load before the measured time, not recorded")
		fs.Float64Var(&f.rate, "rate", 0, "open loop: requests per second (latency from the intended send time)")
	}
	if d.Settle {
		fs.DurationVar(&f.Settle, "settle", time.Minute, "before each microload, wait up to this long for the target to be as "+
			"quiet as at the start (0: no wait)")
	}
	if d.Shard {
		f.Shard.register(fs)
	}
}

// concurrencyFlag is --concurrency: a number of clients, or auto.
type concurrencyFlag struct {
	n           *int
	auto, given *bool
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
	*c.given = true
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
	MaxDuration    = 24 * time.Hour
	minRate        = 0.01 // one request in 100 s
	maxRate        = 10_000_000
	maxConcurrency = 100_000
	minMaxBody     = 1 << 10
)

func (f *LoadFlags) Validate() error {
	switch {
	case f.Duration <= 0 || f.Duration > MaxDuration:
		return UsageError{fmt.Sprintf("--duration %v: want more than 0 and at most %v", f.Duration, MaxDuration)}
	case f.warmup < 0 || f.warmup > MaxDuration:
		return UsageError{fmt.Sprintf("--warmup %v: want 0 or more and at most %v", f.warmup, MaxDuration)}
	case f.AutoConcurrency && !f.autoKnown:
		return UsageError{"--concurrency auto: only probe <microload>, probe all and probe http choose their clients; give a number"}
	case f.Concurrency <= 0 || f.Concurrency > maxConcurrency:
		return UsageError{fmt.Sprintf("--concurrency %d: want 1 to %d", f.Concurrency, maxConcurrency)}
	case math.IsNaN(f.rate) || math.IsInf(f.rate, 0) || f.rate < 0 || f.rate > 0 && (f.rate < minRate || f.rate > maxRate):
		return UsageError{fmt.Sprintf("--rate %v: want 0 (closed loop) or %g to %g requests per second", f.rate, minRate, float64(maxRate))}
	case ValidTimeout(f.Timeout) != nil:
		return ValidTimeout(f.Timeout)
	case ValidMaxBody(f.maxBody) != nil:
		return ValidMaxBody(f.maxBody)
	case f.replyMemory < minMaxBody:
		return UsageError{fmt.Sprintf("--reply-memory %v: want at least 1 KiB", f.replyMemory)}
	case CheckSettle(f.Settle) != nil:
		return CheckSettle(f.Settle)
	}
	return f.Shard.validate(f)
}

// limitMemory sets the Go runtime's soft memory limit (unless GOMEMLIMIT
// does) to what the load may hold: the reply budget, each client's
// allowances, and room for the rest. Reply buffers are dropped after each
// reply; without a limit the collector lets such garbage grow to twice
// the live heap, and a hostile target's endless replies took probe past
// 800 MB.
func (f *LoadFlags) limitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	clients := f.Concurrency
	if f.AutoConcurrency {
		clients = max(clients, pipeline.AutoClientsCap())
	}
	debug.SetMemoryLimit(int64(f.replyMemory) + int64(clients)*2*h1.Allowance + 64<<20)
}

// options are the load engine's options of these flags.
func (f *LoadFlags) Options() probes.LoadOptions {
	return probes.LoadOptions{Concurrency: f.Concurrency, Rate: f.rate, Duration: f.Duration, Warmup: f.warmup, Timeout: f.Timeout,
		MaxBody: int(f.maxBody), ReplyMemory: int64(f.replyMemory)}
}

// profileFlags turn on continuous profiling and say where the profiles are
// and which rules read them.
type ProfileFlags struct {
	Profile, wall  bool
	Overhead       bool // --profiling-overhead
	Pprof, Rules   string
	MaxProfile     ByteSize
	Experiment     bool
	experimentTime time.Duration
}

// ProfileOptions shape the profile group's flags.
type ProfileOptions struct {
	ByDefault bool   // --profile's default
	Help      string // --profile's help: what profiling does in this command
	// Wall is --wall's default: on only where the wall-clock profile is
	// read (a ramp's windows past the knee). fgprof walks every
	// goroutine's stack 100 times a second in the target, the costliest
	// part of profiling; a microload's report reads nothing of it.
	Wall bool
}

// Register adds the group's flags.
func (f *ProfileFlags) Register(fs *flag.FlagSet, o ProfileOptions) {
	fs.BoolVar(&f.Profile, "profile", o.ByDefault, o.Help)
	fs.StringVar(&f.Pprof, "pprof", "", "URL of the target's /debug/pprof/ (default: TARGET/debug/pprof/)")
	fs.StringVar(&f.Rules, "rules", "", "more analyzer rules, a JSON or Jsonnet file (see analyzers/rules.json)")
	wallHelp := "with --profile: also take fgprof's wall-clock profile into wall.pb.gz (it costs the target the most of " +
		"profiling, and this report reads nothing of it)"
	if o.Wall {
		wallHelp = "with --profile: also take fgprof's wall-clock profile of each window (what requests waited on past the knee)"
	}
	fs.BoolVar(&f.wall, "wall", o.Wall, wallHelp)
	fs.BoolVar(&f.Overhead, "profiling-overhead", false, "with --profile (microloads, all, http): after each run, legs of it "+
		"with and without profiling, taking turns, say what profiling cost the target's throughput (profiling_overhead)")
	fs.BoolVar(&f.Experiment, "experiment", true, "with --profile (probe all, http and the microload commands; not ab or scale): "+
		"after a run whose findings rest on thin evidence, "+
		"a short confirming run that varies the request and compares each finding's CPU per request (docs/GUIDE.md, The experiment)")
	fs.DurationVar(&f.experimentTime, "experiment-time", 12*time.Second, "with --experiment: the most one microload's experiment may take")
	f.RegisterMaxProfile(fs)
}

// experimentBudget is the time the experiment may take after each run
// (0: no experiment).
func (f *ProfileFlags) ExperimentBudget() time.Duration {
	if !f.Profile || !f.Experiment {
		return 0
	}
	return f.experimentTime
}

// registerMaxProfile adds --max-profile (every command that reads profiles).
func (f *ProfileFlags) RegisterMaxProfile(fs *flag.FlagSet) {
	f.MaxProfile = pprofio.DefaultLimit
	fs.Var(&f.MaxProfile, "max-profile", "largest profile, as read and as decompressed (an endless reply or a gzip bomb is an error)")
}

func (f *ProfileFlags) Validate() error {
	if f.Experiment && f.experimentTime < pipeline.MinExperimentTime {
		return UsageError{fmt.Sprintf("--experiment-time %s: want at least %s (or --experiment=false)", f.experimentTime,
			pipeline.MinExperimentTime)}
	}
	if f.MaxProfile < minMaxBody {
		return UsageError{fmt.Sprintf("--max-profile %v: want at least 1 KiB", f.MaxProfile)}
	}
	if f.Pprof != "" {
		if u, err := url.Parse(f.Pprof); err != nil || u.Host == "" {
			return UsageError{fmt.Sprintf("--pprof %q is not a URL", f.Pprof)}
		}
	}
	return nil
}

// loadRules is the analyzers' catalog, with --rules FILE's rules added
// (pipeline.LoadRules); a file that cannot be read or used is a usage error.
func (f *ProfileFlags) loadRules(ctx context.Context) ([]pipeline.Rule, error) {
	if f.Rules == "" {
		return pipeline.LoadRules("", nil)
	}
	src, err := readJSONOrJsonnet(ctx, f.Rules)
	if err != nil {
		return nil, UsageError{"--rules " + err.Error()}
	}
	rules, err := pipeline.LoadRules(f.Rules, src)
	if err != nil {
		return nil, UsageError{"--rules " + err.Error()}
	}
	return rules, nil
}

// options say where the profiles of the target at u are, for a run of
// duration d; nil without --profile. An explicit --pprof applies to a
// target given by URL.
func (f *ProfileFlags) Options(u *url.URL, d time.Duration) *target.ProfileOptions {
	if !f.Profile {
		return nil
	}
	o := &target.ProfileOptions{PprofURL: u.JoinPath("/debug/pprof/"), FgprofURL: u.JoinPath("/debug/fgprof"),
		MaxProfile: int64(f.MaxProfile)}
	if f.Pprof != "" {
		given, _ := url.Parse(f.Pprof) // checked by validate
		if !strings.HasSuffix(given.Path, "/") {
			given.Path += "/"
		}
		o.PprofURL = given
		o.FgprofURL = given.JoinPath("../fgprof")
	}
	if !f.wall {
		o.FgprofURL = nil
	}
	// Windows short enough to show change, long enough to hold samples.
	o.Window = min(5*time.Second, max(time.Second, d/2))
	return o
}

// byteSize is a flag of bytes: 65536, 64KiB, 64MiB, 1GiB (or kB, MB, GB).
type ByteSize int64

func (b ByteSize) String() string { return humanize.IBytes(uint64(b)) }

func (b *ByteSize) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	if err != nil || n > 1<<40 {
		return fmt.Errorf("%q is not a size like 64MiB", s)
	}
	*b = ByteSize(n)
	return nil
}

// outputFlags say where the report goes, and what makes the run fail.
type OutputFlags struct {
	Out         string
	JSON, Force bool
	FailOn      []string
	Name        string // the default folder's prefix
	dir         string // the folder claimed for this run
}

func (f *OutputFlags) Register(fs *flag.FlagSet, defaultName string) {
	f.Name = defaultName
	fs.StringVar(&f.Out, "out", "", "report folder (default probe-out/"+defaultName+"-<time>/); it must be new or empty")
	fs.BoolVar(&f.Force, "force", false, "use a non-empty --out: clear probe's files from it first")
	fs.BoolVar(&f.JSON, "json", false, "print report.json on stdout and nothing else there")
}

// claim picks the report folder and makes it ready, before the run.
func (f *OutputFlags) claim() (string, error) {
	f.dir = outDir(f.Out, f.Name)
	return f.dir, ClaimOut(f.dir, f.Force)
}

// registerGates adds --fail-on (commands whose report it can judge).
func (f *OutputFlags) RegisterGates(fs *flag.FlagSet, examples string) {
	fs.Func("fail-on", "exit 1 when the run breaks this threshold (repeatable): "+examples, func(s string) error {
		f.FailOn = append(f.FailOn, s)
		return nil
	})
}

// requestFlags describe one HTTP request (probe http, probe ab http, and
// probe fuzz http, whose path and body are templates).
type RequestFlags struct {
	Path, Method, Body, param string
	Headers                   []string
}

// RequestOptions shape the request group's flags.
type RequestOptions struct {
	PathHelp, BodyHelp string // what --path and --body are in this command
	Method             string // --method's default
	Param              bool   // offer --param (a query parameter varied per request)
}

// Register adds the group's flags.
func (f *RequestFlags) Register(fs *flag.FlagSet, o RequestOptions) {
	fs.StringVar(&f.Path, "path", "", o.PathHelp)
	fs.StringVar(&f.Method, "method", o.Method, "HTTP method")
	fs.StringVar(&f.Body, "body", "", o.BodyHelp)
	fs.Func("header", "request header Name:value (repeatable)", func(s string) error {
		f.Headers = append(f.Headers, s)
		return nil
	})
	if o.Param {
		fs.StringVar(&f.param, "param", "", "vary a query parameter: name=v1,v2,… (each request puts the next value in)")
	}
}

// headerFields parses --header values.
func (f *RequestFlags) HeaderFields() ([]h1.Field, error) {
	var out []h1.Field
	for _, h := range f.Headers {
		field, err := probes.ParseHeader(h)
		if err != nil {
			return nil, UsageError{"--header " + err.Error()}
		}
		out = append(out, field)
	}
	return out, nil
}

// httpMicroload is probe http's microload of these flags.
func (f *RequestFlags) HTTPMicroload() (*probes.HTTP, error) {
	if f.Path == "" {
		return nil, UsageError{"http: --path is required"}
	}
	if !strings.HasPrefix(f.Path, "/") {
		return nil, UsageError{fmt.Sprintf("--path %q must start with /", f.Path)}
	}
	if _, err := url.ParseRequestURI(f.Path); err != nil {
		return nil, UsageError{fmt.Sprintf("--path %q: %v", f.Path, err)}
	}
	if reason := h1.CheckTarget(f.Path); reason != "" {
		return nil, UsageError{fmt.Sprintf("--path %q %s: escape it (%%20 for a space)", f.Path, reason)}
	}
	l := &probes.HTTP{Method: strings.ToUpper(f.Method), Path: f.Path}
	if f.Body != "" {
		l.Body = []byte(f.Body)
	}
	var err error
	if l.Header, err = f.HeaderFields(); err != nil {
		return nil, err
	}
	if f.param != "" {
		if l.Param, l.Values, err = probes.ParseParam(f.param); err != nil {
			return nil, UsageError{"--param " + err.Error()}
		}
	}
	return l, nil
}

// Flags that several groups or commands take are declared and validated
// here once: --fixture-mode, --timeout and --max-body mean the same in
// every command that has them.

// registerFixtureMode adds --fixture-mode (the started fixture's mode).
func RegisterFixtureMode(fs *flag.FlagSet, mode *string) {
	*mode = "per-request"
	fs.StringVar(mode, "fixture-mode", *mode, "mode of the started fixture: per-request or load-time")
}

func ValidFixtureMode(mode string) error {
	if mode != "per-request" && mode != "load-time" {
		return UsageError{fmt.Sprintf("--fixture-mode %q: want per-request or load-time", mode)}
	}
	return nil
}

// registerTimeout adds --timeout, the longest wait for one reply.
func RegisterTimeout(fs *flag.FlagSet, timeout *time.Duration, def time.Duration, help string) {
	if help == "" {
		help = "longest wait for one reply"
	}
	fs.DurationVar(timeout, "timeout", def, help)
}

func ValidTimeout(timeout time.Duration) error {
	if timeout <= 0 || timeout > MaxDuration {
		return UsageError{fmt.Sprintf("--timeout %v: want more than 0 and at most %v", timeout, MaxDuration)}
	}
	return nil
}

// registerMaxBody adds --max-body, the largest reply body.
func RegisterMaxBody(fs *flag.FlagSet, maxBody *ByteSize) {
	*maxBody = h1.DefaultMaxBody
	fs.Var(maxBody, "max-body", "largest reply body, as received and as decoded (a larger one is an error of its request)")
}

func ValidMaxBody(maxBody ByteSize) error {
	if maxBody < minMaxBody {
		return UsageError{fmt.Sprintf("--max-body %v: want at least 1 KiB", maxBody)}
	}
	return nil
}

// checkSettle is the bound of a --settle.
func CheckSettle(d time.Duration) error {
	if d < 0 || d > MaxDuration {
		return UsageError{fmt.Sprintf("--settle %v: want 0 (no wait) up to %v", d, MaxDuration)}
	}
	return nil
}
