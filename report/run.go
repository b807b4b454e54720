package report

import (
	"maps"
	"sort"
	"time"

	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
)

// Summary is the head of every report.json that measured a target: the
// fields of DESIGN.md's original contract.
type Summary struct {
	Microload string              `json:"microload"`
	Target    string              `json:"target"`
	Mode      string              `json:"mode"`
	DurationS float64             `json:"duration_s"`
	Latency   Latency             `json:"latency"`
	Findings  []analyzers.Finding `json:"findings"`
	Crashes   []Crash             `json:"crashes"`
	Warnings  []result.Warning    `json:"warnings"`
}

// Report is report.json of one microload's run: the summary, and what a
// reader needs to trust the figures.
type Run struct {
	Summary
	// Production: the fleet's profile the findings were weighed against
	// (probe all --production); nil without.
	Production *Production `json:"production,omitempty"`

	AcceptEncoding string                    `json:"accept_encoding,omitempty"` // what the requests accepted (gzip unless told otherwise)
	Protocol       string                    `json:"protocol,omitempty"`        // HTTP/2 and how (h2c or TLS, streams a connection); absent: HTTP/1.1
	Concurrency    int                       `json:"concurrency,omitempty"`
	Rate           float64                   `json:"rate,omitempty"`
	Operations     []Operation               `json:"operations"`
	Errors         map[string]int64          `json:"errors"`
	Connections    Connections               `json:"connections"`
	Bytes          Bytes                     `json:"bytes"`
	ReplyDigests   []Digest                  `json:"reply_digests"`
	Generator      Generator                 `json:"generator"`
	TargetProcess  *Process                  `json:"target_process,omitempty"`
	TargetRuntime  *result.Runtime           `json:"target_runtime,omitempty"`
	LeakCheck      *LeakCheck                `json:"leak_check,omitempty"`     // a profiled run's look for leaked goroutines
	ProfilingCost  *result.ProfilingCost     `json:"profiling_cost,omitempty"` // what the profiling cost the target, measured in the run
	MCP            *result.MCPLane           `json:"mcp,omitempty"`            // the MCP lane and protocol version measured
	Machine        Machine                   `json:"machine"`
	Ended          string                    `json:"ended,omitempty"`
	Timeline       []analyzers.WindowSummary `json:"timeline,omitempty"` // CPU windows of a profiled run
	Unexplained    []analyzers.Unexplained   `json:"unexplained,omitempty"`
	// CPU is how the target's CPU divides by what its goroutines do: the
	// denominators of the findings' shares (DESIGN.md).
	CPU          *analyzers.CPUSplit `json:"cpu_split,omitempty"`
	ProfileFiles []string            `json:"profile_files,omitempty"`
	Thresholds   []Threshold         `json:"thresholds,omitempty"`
	Writes       *Writes             `json:"writes,omitempty"` // with --during-writes
	Settle       *Settle             `json:"settle,omitempty"` // the wait for a quiet target (probe all)
	PerSecond    []SecondPoint       `json:"per_second,omitempty"`
	Stream       *Stream             `json:"stream,omitempty"` // a server-streaming gRPC method's messages (probe grpc)
	// AutoClients is how --concurrency auto chose Concurrency.
	AutoClients *Concurrency `json:"auto_concurrency,omitempty"`
	// Shard is which part of a run across machines this is (--shard).
	Shard      *Shard      `json:"shard,omitempty"`
	Experiment *Experiment `json:"experiment,omitempty"` // the confirming run of thin findings (experiment.go)
	// Verification is --verify's: each load-time or cacheable finding's
	// variant measured against the original (verification.go).
	Verification []Verification `json:"verification,omitempty"`

	latency *hdrhistogram.Histogram
	ops     []opHistogram
	files   map[string][]byte // profiles and flame graphs, written beside the report
	// ProfilingOverhead is what --profile cost, when measured (--profiling-overhead).
	ProfilingOverhead *ProfilingOverhead `json:"profiling_overhead,omitempty"`
}

type opHistogram struct {
	name string
	h    *hdrhistogram.Histogram
}

// Latency summarises the measured operations (session set-up excluded).
type Latency struct {
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	RPS      float64 `json:"rps"`
	Percentiles
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// SecondPoint is one point of the per-second series: the requests that
// completed in the second starting t seconds into the window (wider points
// past 3,600: t's spacing says their width), latencies from the intended
// send time, within about 6%.
type SecondPoint struct {
	T        float64 `json:"t"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
}

// Crash is one input that killed the target (DESIGN.md).
type Crash struct {
	Class    string `json:"class"`
	Input    string `json:"input"`
	Endpoint string `json:"endpoint"`
	Evidence string `json:"evidence"`

	// A fuzz run's crashes add these.
	Frames      []string `json:"frames,omitempty"`         // top of the crash stack, runtime frames left out
	Repro       string   `json:"repro,omitempty"`          // one line that reproduces it against a running target
	File        string   `json:"file,omitempty"`           // under crashers/
	Original    string   `json:"original_input,omitempty"` // as the search found it, before shrinking
	Shrink      string   `json:"shrink,omitempty"`
	FoundAfterS float64  `json:"found_after_s,omitempty"`
	Seen        int      `json:"seen,omitempty"`
	Confirmed   bool     `json:"confirmed,omitempty"`
	Concurrent  bool     `json:"concurrent,omitempty"`  // shows only under concurrent requests
	Also        []string `json:"also_inputs,omitempty"` // other requests that crash the same way
	Hole        string   `json:"hole,omitempty"`        // the hole shrunk, when one alone crashes (an MCP tool's argument)
}

// Operation is one row of the table.
type Operation struct {
	Op     string  `json:"op"`
	Setup  bool    `json:"setup,omitempty"`
	Calls  int64   `json:"calls"`
	Errors int64   `json:"errors"`
	RPS    float64 `json:"rps"`
	Percentiles
	ServiceP99 float64 `json:"service_p99_ms"` // from the actual send time; differs from p99 in the open loop
}

type Connections struct {
	Clients int `json:"clients"`
	Opened  int `json:"opened"`
}

type Bytes struct {
	Wire    int64 `json:"wire"`
	Decoded int64 `json:"decoded"`
}

// Digest: how many distinct replies a request key got.
type Digest struct {
	Key      string `json:"key"`
	Requests int64  `json:"requests"`
	Distinct int    `json:"distinct"`
}

type Generator struct {
	CPUSeconds      float64 `json:"cpu_s"`
	CPUPerRequestUS float64 `json:"cpu_per_req_us"`
	CPUs            int     `json:"cpus"`
}

type Process struct {
	PID        int     `json:"pid"`
	CPUSeconds float64 `json:"cpu_s"`
	CPUCores   float64 `json:"cpu_cores"`
	MaxRSS     int64   `json:"max_rss_bytes"`
	MaxThreads int     `json:"max_threads"`
	MaxFDs     int     `json:"max_fds"`
}

type Machine struct {
	OthersCPUCores float64 `json:"others_cpu_cores"`
	Cores          int     `json:"cores,omitempty"` // the machine's CPUs where the run ran (machine.CPUs, not the affinity mask): no figure in cores can be more
}

// Analysis is what the pipeline's analyze step made of a run: findings, the
// timeline of CPU windows, crashes, warnings about the profiles, and the
// files to keep beside the report (profiles as fetched, flame graphs).
type Analysis struct {
	Findings    []analyzers.Finding
	Unexplained []analyzers.Unexplained
	CPU         *analyzers.CPUSplit // how the target's CPU divides: the shares' denominators
	Timeline    []analyzers.WindowSummary
	Crashes     []Crash
	Warnings    []result.Warning
	Files       map[string][]byte
	Experiment  *Experiment
}

// LatencyHistogram is the run's whole latency distribution (nil for a run
// read back from report.json): what a merge or a suite combines.
func (r *Run) LatencyHistogram() *hdrhistogram.Histogram { return r.latency }

func Millis(us int64) float64 { return float64(us) / 1000 }

func Summarise(h *hdrhistogram.Histogram, calls, errors int64, d time.Duration) Latency {
	l := Latency{Requests: calls, Errors: errors}
	if d > 0 {
		l.RPS = float64(calls-errors) / d.Seconds() // replies that passed their checks
	}
	if h.TotalCount() > 0 {
		l.P50, l.P95, l.P99, l.Max = Millis(h.ValueAtQuantile(50)), Millis(h.ValueAtQuantile(95)), Millis(h.ValueAtQuantile(99)), Millis(h.Max())
	}
	return l
}

// FromRun is the report of one microload's run and what was made of it.
func FromRun(run *result.Run, a Analysis) *Run {
	calls, errs := run.Requests()
	r := &Run{
		Summary: Summary{Microload: run.Microload, Target: run.Target, Mode: run.Mode, DurationS: run.Duration.Seconds(),
			Findings: NonNil(a.Findings), Crashes: NonNil(a.Crashes), Warnings: append([]result.Warning{}, run.Warnings...)},
		AcceptEncoding: run.AcceptEncoding, Protocol: run.Protocol, Concurrency: run.Concurrency, Rate: run.Rate,
		Errors:      result.CapReasons(run.Errors, opNames(run)),
		Connections: Connections{Clients: run.Clients, Opened: run.ConnsOpened},
		Bytes:       Bytes{Wire: run.WireBytes, Decoded: run.Decoded},
		Generator: Generator{CPUSeconds: run.GeneratorCPU.Seconds(), CPUPerRequestUS: float64(run.CPUPerRequest().Nanoseconds()) / 1000,
			CPUs: run.CPUs},
		Machine: Machine{OthersCPUCores: run.OthersCPU, Cores: run.MachineCPUs}, Ended: run.Ended, Timeline: a.Timeline,
		Unexplained: a.Unexplained, CPU: a.CPU,
		Experiment: a.Experiment, latency: run.Latency(), files: maps.Clone(a.Files),
	}
	for _, w := range a.Warnings {
		r.Warnings = result.AddWarning(r.Warnings, w.Kind, w.Message)
	}
	r.Latency = Summarise(r.latency, calls, errs, run.Duration)
	for _, op := range run.Ops {
		l := Summarise(op.Latency, op.Calls, op.Errors, run.Duration)
		row := Operation{Op: op.Name, Setup: op.Setup, Calls: op.Calls, Errors: op.Errors, Percentiles: l.Percentiles}
		if !op.Setup {
			row.RPS = l.RPS
		}
		row.ServiceP99 = Millis(op.Service.ValueAtQuantile(99))
		r.ops = append(r.ops, opHistogram{op.Name, op.Latency})
		r.Operations = append(r.Operations, row)
	}
	for _, s := range run.Seconds {
		p := SecondPoint{T: s.At.Seconds(), Requests: s.Requests, Errors: s.Errors}
		if s.Latency != nil && s.Latency.TotalCount() > 0 {
			p.P50, p.P99 = Millis(s.Latency.ValueAtQuantile(50)), Millis(s.Latency.ValueAtQuantile(99))
		}
		r.PerSecond = append(r.PerSecond, p)
	}
	for _, d := range run.Digests {
		r.ReplyDigests = append(r.ReplyDigests, Digest{Key: d.Key, Requests: d.Requests, Distinct: d.Distinct})
	}
	r.TargetRuntime = run.TargetRuntime
	r.LeakCheck = leakCheckOf(run)
	if run.Profiles != nil {
		r.ProfilingCost = run.Profiles.Cost
	}
	r.MCP = run.MCP
	if tp := run.TargetProc; tp != nil {
		r.TargetProcess = &Process{PID: tp.PID, CPUSeconds: tp.CPU.Seconds(), MaxRSS: tp.MaxRSS, MaxThreads: tp.MaxThreads, MaxFDs: tp.MaxFDs}
		if span := run.CPUSpan(); span > 0 { // the window the CPU was measured over, not --duration
			r.TargetProcess.CPUCores = tp.CPU.Seconds() / span.Seconds()
		}
	}
	if r.Errors == nil {
		r.Errors = map[string]int64{}
	}
	for name := range r.files {
		r.ProfileFiles = append(r.ProfileFiles, name)
	}
	sort.Strings(r.ProfileFiles)
	return r
}

// opNames are the names of run's operations.
func opNames(run *result.Run) []string {
	names := make([]string, len(run.Ops))
	for i, op := range run.Ops {
		names[i] = op.Name
	}
	return names
}

func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Warn adds a warning once.
func (r *Run) Warn(kind, msg string) { r.Warnings = result.AddWarning(r.Warnings, kind, msg) }

// Failed says whether the run should exit non-zero: failed checks, or a run
// that ended early.
func (r *Run) Failed() bool {
	return r.Latency.Errors > 0 || r.Ended != "" || r.LostWrites() > 0
}

// LostWrites counts the changes of --during-writes that never showed.
func (r *Run) LostWrites() int {
	if r.Writes == nil {
		return 0
	}
	return r.Writes.Lost
}
