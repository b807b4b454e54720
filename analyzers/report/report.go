// Package report turns runs, findings and crashes into report.json (the
// schema in DESIGN.md), report.md and the terminal table. It formats; it
// does not measure.
package report

import (
	"bytes"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/pprof/profile"

	"probe/analyzers"
	"probe/flamegraphs"
	"probe/probes"
)

// Report is report.json. Fields up to Warnings are DESIGN.md's contract; the
// rest add what a reader needs to trust the figures.
type Report struct {
	Microload string              `json:"microload"`
	Target    string              `json:"target"`
	Mode      string              `json:"mode"`
	DurationS float64             `json:"duration_s"`
	Latency   Latency             `json:"latency"`
	Findings  []analyzers.Finding `json:"findings"`
	Crashes   []Crash             `json:"crashes"`
	Warnings  []probes.Warning    `json:"warnings"`

	Concurrency   int                       `json:"concurrency,omitempty"`
	Rate          float64                   `json:"rate,omitempty"`
	Operations    []Operation               `json:"operations"`
	Errors        map[string]int64          `json:"errors"`
	Connections   Connections               `json:"connections"`
	Bytes         Bytes                     `json:"bytes"`
	Digests       []probes.Digest           `json:"-"`
	ReplyDigests  []Digest                  `json:"reply_digests"`
	Generator     Generator                 `json:"generator"`
	TargetProcess *Process                  `json:"target_process,omitempty"`
	Machine       Machine                   `json:"machine"`
	Ended         string                    `json:"ended,omitempty"`
	Runs          []*Report                 `json:"runs,omitempty"`     // probe all: one report per microload
	Timeline      []analyzers.WindowSummary `json:"timeline,omitempty"` // CPU windows of a --profile run
	ProfileFiles  []string                  `json:"profile_files,omitempty"`
	Fuzz          *FuzzSummary              `json:"fuzz,omitempty"`

	latency  *hdrhistogram.Histogram
	ops      map[string]*hdrhistogram.Histogram
	profiles map[string][]byte // file name → bytes, written with the report
	files    map[string][]byte // other files by relative path (crashers/…)
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
}

func ms(us int64) float64 { return float64(us) / 1000 }

func summarise(h *hdrhistogram.Histogram, calls, errors int64, d time.Duration) Latency {
	l := Latency{Requests: calls, Errors: errors}
	if d > 0 {
		l.RPS = float64(calls) / d.Seconds()
	}
	if h.TotalCount() > 0 {
		l.P50, l.P95, l.P99, l.Max = ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(95)), ms(h.ValueAtQuantile(99)), ms(h.Max())
	}
	return l
}

// FromRun builds the report of one microload's run.
func FromRun(run *probes.Run) *Report {
	calls, errs := run.Requests()
	r := &Report{
		Microload: run.Microload, Target: run.Target, Mode: run.Mode, DurationS: run.Duration.Seconds(),
		Findings: []analyzers.Finding{}, Crashes: []Crash{}, Warnings: append([]probes.Warning{}, run.Warnings...),
		Concurrency: run.Concurrency, Rate: run.Rate, Errors: run.Errors,
		Connections: Connections{Clients: run.Clients, Opened: run.ConnsOpened},
		Bytes:       Bytes{Wire: run.WireBytes, Decoded: run.Decoded},
		Generator: Generator{CPUSeconds: run.GeneratorCPU.Seconds(), CPUPerRequestUS: float64(run.CPUPerRequest().Nanoseconds()) / 1000,
			CPUs: run.CPUs},
		Machine: Machine{OthersCPUCores: run.OthersCPU}, Ended: run.Ended, Digests: run.Digests,
		latency: run.Latency(), ops: map[string]*hdrhistogram.Histogram{},
	}
	r.Latency = summarise(r.latency, calls, errs, run.Duration)
	for _, op := range run.Ops {
		l := summarise(op.Latency, op.Calls, op.Errors, run.Duration)
		row := Operation{Op: op.Name, Setup: op.Setup, Calls: op.Calls, Errors: op.Errors, Percentiles: l.Percentiles}
		if !op.Setup {
			row.RPS = l.RPS
		}
		row.ServiceP99 = ms(op.Service.ValueAtQuantile(99))
		r.ops[op.Name] = op.Latency
		r.Operations = append(r.Operations, row)
	}
	for _, d := range run.Digests {
		r.ReplyDigests = append(r.ReplyDigests, Digest{Key: d.Key, Requests: d.Requests, Distinct: d.Distinct})
	}
	if tp := run.TargetProc; tp != nil {
		r.TargetProcess = &Process{PID: tp.PID, CPUSeconds: tp.CPU.Seconds(), MaxRSS: tp.MaxRSS, MaxThreads: tp.MaxThreads, MaxFDs: tp.MaxFDs}
		if run.Duration > 0 {
			r.TargetProcess.CPUCores = tp.CPU.Seconds() / run.Duration.Seconds()
		}
	}
	if r.Errors == nil {
		r.Errors = map[string]int64{}
	}
	if e := run.TargetExit; e != nil {
		r.Crashes = append(r.Crashes, crashOf(run, e))
	} else if n := run.Errors["timeout"]; n > 0 {
		// Requests that outlived --timeout while the process lived.
		c := analyzers.ClassifyHang(fmt.Sprintf("%d requests got no reply within the timeout while the target's process lived", n))
		r.Crashes = append(r.Crashes, Crash{Class: c.Class, Input: "the " + run.Microload + " load", Endpoint: endpoints(run), Evidence: c.Evidence})
	}
	return r
}

// AddProfiles analyses the run's profiles with rules and keeps them to be
// written with the report.
func (r *Report) AddProfiles(run *probes.Run, rules []analyzers.Rule) {
	p := run.Profiles
	if p == nil {
		return
	}
	calls, _ := run.Requests()
	ev := analyzers.Evidence{Endpoint: endpoints(run), Digests: run.Digests, Requests: calls,
		LogLines: run.LogLines, LogBytes: run.LogBytes, Duration: run.Duration}
	if r.Findings = analyzers.Analyze(p.CPU, p.Allocs, ev, rules); r.Findings == nil {
		r.Findings = []analyzers.Finding{}
	}
	r.Timeline = analyzers.Timeline(p.Windows, rules)
	if tp := run.TargetProc; tp != nil && p.CPU != nil && p.CPU.DurationNanos > 0 {
		profiled := analyzers.CPUTime(p.CPU)
		if tp.CPU > 0 && profiled < tp.CPU/2 {
			r.Warnings = append(r.Warnings, probes.Warning{Kind: "profile-partial", Message: fmt.Sprintf(
				"the CPU profile covers %.1fs of the %.1fs of CPU the target's processes used: the rest ran in its child processes, which /debug/pprof does not see",
				profiled.Seconds(), tp.CPU.Seconds())})
		}
	}
	r.profiles = maps.Clone(p.Raw)
	r.addFlameGraphs(p)
	for name := range r.profiles {
		r.ProfileFiles = append(r.ProfileFiles, name)
	}
	sort.Strings(r.ProfileFiles)
}

// addFlameGraphs draws flame.html (CPU) and flame-alloc.html, the frames
// the findings name outlined.
func (r *Report) addFlameGraphs(p *probes.Profiles) {
	named := map[string]bool{}
	for _, f := range r.Findings {
		for _, fr := range f.Frames {
			named[fr] = true
		}
	}
	for _, g := range []struct {
		file, index string
		prof        *profile.Profile
	}{{"flame.html", "cpu", p.CPU}, {"flame-alloc.html", "alloc_space", p.Allocs}} {
		if g.prof == nil {
			continue
		}
		t, err := flamegraphs.Fold(g.prof, g.index, nil)
		if err != nil {
			continue
		}
		var b bytes.Buffer
		title := fmt.Sprintf("%s: %s of %s", r.Microload, t.Sample, r.Target)
		if flamegraphs.WriteHTML(&b, t, flamegraphs.Options{Title: title, Highlight: named}) == nil {
			r.profiles[g.file] = b.Bytes()
		}
	}
}

// crashOf classifies a target that died under a microload's load.
func crashOf(run *probes.Run, e *probes.Exit) Crash {
	c := Crash{Class: "unknown", Input: "the " + run.Microload + " load (the input that killed it is not isolated: see probe fuzz)",
		Endpoint: endpoints(run), Evidence: e.Status}
	if cl, ok := analyzers.ClassifyExit(e.Status, e.Stderr); ok {
		c.Class, c.Evidence = cl.Class, e.Status+": "+cl.Evidence
	}
	if head := firstLines(e.Stderr, 5); head != "" {
		c.Evidence += "\n" + head
	}
	return c
}

// endpoints names the run's measured operations: where its findings are.
func endpoints(run *probes.Run) string {
	var ops []string
	for _, op := range run.Ops {
		if !op.Setup {
			ops = append(ops, op.Name)
		}
	}
	return strings.Join(ops, ", ")
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	return strings.Join(lines[:min(len(lines), n)], "\n")
}

// Combine makes the report of `probe all` from the microloads' reports.
func Combine(target string, reports []*Report) *Report {
	all := &Report{Microload: "all", Target: target, Findings: []analyzers.Finding{}, Crashes: []Crash{}, Warnings: []probes.Warning{},
		Errors: map[string]int64{}, Runs: reports, latency: hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)}
	var calls, errs int64
	var d time.Duration
	for _, r := range reports {
		all.Mode = r.Mode
		all.DurationS += r.DurationS
		d += time.Duration(r.DurationS * float64(time.Second))
		calls += r.Latency.Requests
		errs += r.Latency.Errors
		all.latency.Merge(r.latency)
		all.Findings = append(all.Findings, r.Findings...)
		all.Crashes = append(all.Crashes, r.Crashes...)
		for _, w := range r.Warnings {
			all.Warnings = append(all.Warnings, probes.Warning{Kind: w.Kind, Message: r.Microload + ": " + w.Message})
		}
		for k, n := range r.Errors {
			all.Errors[r.Microload+": "+k] += n
		}
		if r.Ended != "" && all.Ended == "" {
			all.Ended = r.Microload + ": " + r.Ended
		}
	}
	all.Latency = summarise(all.latency, calls, errs, d)
	return all
}

// Failed says whether the run should exit non-zero: failed checks, or a run
// that ended early.
func (r *Report) Failed() bool {
	return r.Latency.Errors > 0 || r.Ended != ""
}
