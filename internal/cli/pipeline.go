package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/flamegraphs"
	"github.com/probehq/probe/lib/crash"
	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// The pipeline every measuring command runs, the same steps the same way:
// load (with capture) → analyze → write. Its parts are fields so that
// tests swap them, as pprof's driver takes its fetcher and UI.
type pipeline struct {
	rules    []analyzers.Rule
	progress *progressLine
	// load drives a microload against a target (probes.RunLoad).
	load func(ctx context.Context, ml probes.Microload, t *probes.Target, o probes.LoadOptions) (*probes.Run, error)
}

func newPipeline(rules []analyzers.Rule, progress *progressLine) *pipeline {
	return &pipeline{rules: rules, progress: progress, load: probes.RunLoad}
}

// measure loads ml against t and analyses what it saw: one microload's
// report, and the run it was made from.
func (p *pipeline) measure(ctx context.Context, label string, ml probes.Microload, t *probes.Target, o probes.LoadOptions) (*report.RunReport, *probes.Run, error) {
	if p.progress != nil {
		p.progress.name = label
		o.Progress = p.progress.update
	}
	run, err := p.load(ctx, ml, t, o)
	if p.progress != nil {
		p.progress.clear()
	}
	if err != nil {
		return nil, nil, err
	}
	hintWarnings(run.Warnings)
	return report.FromRun(run, analyzeRun(run, p.rules)), run, nil
}

// warningHints are the command-line flags that answer a warning of the load
// engine; the library names the problem, the command names the flag.
var warningHints = map[string]string{
	"generator-bound": "try --pin",
	"rate-not-kept":   "raise --concurrency",
}

func hintWarnings(ws []probes.Warning) {
	for i, w := range ws {
		if h, ok := warningHints[w.Kind]; ok {
			ws[i].Message += " (" + h + ")"
		}
	}
}

// analyzeRun is the analyze step: crashes from how the target ended, and,
// when the run was profiled, the findings, the timeline of CPU windows and
// the flame graphs.
func analyzeRun(run *probes.Run, rules []analyzers.Rule) report.Analysis {
	a := report.Analysis{Crashes: crashesOf(run)}
	prof := run.Profiles
	if prof == nil {
		return a
	}
	calls, _ := run.Requests()
	code := frames.Code{MainModule: frames.MainModule(prof.Goroutine, prof.CPU, prof.Allocs)}
	ev := analyzers.Evidence{Endpoint: endpoints(run), MainModule: code.MainModule, Replies: replies(run.Digests), Requests: calls,
		LogLines: run.LogLines, LogBytes: run.LogBytes, Duration: run.Duration}
	res := analyzers.Analyze(prof.CPU, prof.Allocs, ev, rules)
	a.Findings, a.Unexplained = res.Findings, res.Unexplained
	a.Timeline = analyzers.Timeline(prof.Windows, rules)
	if tp := run.TargetProc; tp != nil && prof.CPU != nil && prof.CPU.DurationNanos > 0 {
		profiled := analyzers.CPUTime(prof.CPU)
		if tp.CPU > 0 && profiled < tp.CPU/2 {
			a.Warnings = append(a.Warnings, probes.Warning{Kind: "profile-partial", Message: fmt.Sprintf(
				"the CPU profile covers %.1fs of the %.1fs of CPU the target's processes used: the rest ran in its child processes, which /debug/pprof does not see",
				profiled.Seconds(), tp.CPU.Seconds())})
		}
	}
	a.Files = map[string][]byte{}
	for name, b := range prof.Raw {
		a.Files[name] = b
	}
	title := run.Microload + ": %s of " + run.Target
	for name, b := range flameGraphs(prof.CPU, prof.Allocs, a.Findings, title, code) {
		a.Files[name] = b
	}
	return a
}

// replies are the run's reply digests as the analyzers' evidence.
func replies(ds []probes.Digest) []analyzers.Replies {
	out := make([]analyzers.Replies, len(ds))
	for i, d := range ds {
		out[i] = analyzers.Replies{Key: d.Key, Op: d.Op, Requests: d.Requests, Distinct: d.Distinct, Top: d.Top,
			Input: d.Input, BodyBytes: d.BodyBytes, Request: d.Request, Bodies: d.Bodies}
	}
	return out
}

// flameGraphs draws flame.html (CPU) and flame-alloc.html, the frames the
// findings name outlined; title has a %s for the sample type.
func flameGraphs(cpu, allocs *profile.Profile, findings []analyzers.Finding, title string, code frames.Code) map[string][]byte {
	named := map[string]bool{}
	for _, f := range findings {
		for _, fr := range f.Frames {
			named[fr] = true
		}
	}
	out := map[string][]byte{}
	for _, g := range []struct {
		file, index string
		prof        *profile.Profile
	}{{"flame.html", "cpu", cpu}, {"flame-alloc.html", "alloc_space", allocs}} {
		if g.prof == nil {
			continue
		}
		t, err := flamegraphs.Fold(g.prof, flamegraphs.FoldOptions{SampleIndex: g.index, Code: code})
		if err != nil {
			continue
		}
		var b bytes.Buffer
		if flamegraphs.WriteHTML(&b, t, flamegraphs.Options{Title: fmt.Sprintf(title, t.Sample), Highlight: named}) == nil {
			out[g.file] = b.Bytes()
		}
	}
	return out
}

// crashesOf classifies a target that died under a microload's load, or
// that let requests outlive the timeout while it lived (a hang).
func crashesOf(run *probes.Run) []report.Crash {
	if e := run.TargetExit; e != nil {
		c := report.Crash{Class: "unknown", Input: "the " + run.Microload + " load (the input that killed it is not isolated: see probe fuzz)",
			Endpoint: endpoints(run), Evidence: e.Status}
		if cl, ok := crash.ClassifyExit(e.Status, e.Stderr); ok {
			c.Class, c.Evidence = cl.Class, e.Status+": "+cl.Evidence
		}
		if head := firstLines(e.Stderr, 5); head != "" {
			c.Evidence += "\n" + head
		}
		return []report.Crash{c}
	}
	if n := run.Errors["timeout"]; n > 0 {
		c := crash.ClassifyHang(fmt.Sprintf("%d requests got no reply within the timeout while the target's process lived", n))
		return []report.Crash{{Class: c.Class, Input: "the " + run.Microload + " load", Endpoint: endpoints(run), Evidence: c.Evidence}}
	}
	return nil
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
