package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/probehq/probe/result"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/leak"
	"github.com/probehq/probe/flamegraphs"
	"github.com/probehq/probe/lib/crash"
	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/report"
)

// AnalyzeRun is the analyze step: crashes from how the target ended, slow
// endpoints told from stuck ones, and, when the run was profiled, the
// findings, the timeline of CPU windows, the profile-partial warning and
// the flame graphs.
func AnalyzeRun(run *result.Run, rules []Rule) report.Analysis {
	return AnalyzeRunContext(context.Background(), run, rules)
}

// AnalyzeRunContext is AnalyzeRun until ctx ends (Ctrl-C, SIGTERM): the
// report then holds the findings complete by then, no timeline and no
// flame graph (the profiles as fetched are still its files), and an
// analysis-interrupted warning.
func AnalyzeRunContext(ctx context.Context, run *result.Run, rules []Rule) report.Analysis {
	crashes, slow := crashesOf(run)
	a := report.Analysis{Crashes: crashes, Warnings: slow}
	prof := run.Profiles
	if prof == nil {
		return a
	}
	calls, _ := run.Requests()
	code := frames.Code{MainModule: frames.MainModule(prof.Goroutine, prof.CPU, prof.Allocs)}
	ev := analyzers.Evidence{Endpoint: endpoints(run), MainModule: code.MainModule, Replies: replies(run), Requests: calls,
		LogLines: run.LogLines, LogBytes: run.LogBytes, Duration: run.Duration}
	res := analyzers.AnalyzeContext(ctx, prof.CPU, prof.Allocs, ev, rules)
	a.Findings, a.Unexplained = res.Findings, res.Unexplained
	a.Findings = append(a.Findings, leak.Findings(prof.Leaks, leak.Run{Microload: run.Microload, Endpoint: ev.Endpoint,
		Requests: int64(calls), Clients: run.Concurrency})...)
	if res.CPU.Total > 0 {
		a.CPU = &res.CPU
	}
	if !res.Interrupted {
		a.Timeline = analyzers.Timeline(prof.Windows, rules)
	}
	if w, ok := profilePartial(run); ok {
		a.Warnings = append(a.Warnings, w)
	}
	if why, ok := analyzers.ThinProfile(res.CPU); ok && !res.Interrupted {
		a.Warnings = append(a.Warnings, result.Warning{Kind: "thin-profile", Message: why})
	}
	a.Files = map[string][]byte{}
	for name, b := range prof.Raw {
		a.Files[name] = b
	}
	if res.Interrupted {
		a.Warnings = append(a.Warnings, interruptedAnalysis)
		return a
	}
	title := run.Microload + ": %s of " + run.Target
	for name, b := range flameGraphs(prof.CPU, prof.Allocs, a.Findings, title, code) {
		a.Files[name] = b
	}
	return a
}

// replies are the run's reply digests as the analyzers' evidence.
// The replies of session set-up (MCP's initialize, a login) are left
// out: they answer another request than the endpoint measured, and a
// client that opened its session again inside the window would make the
// endpoint's keys look as if they got different replies.
func replies(run *result.Run) []analyzers.Replies {
	setup := map[string]bool{}
	for _, op := range run.Ops {
		setup[op.Name] = op.Setup
	}
	varied := bodyMembersVaried(run.Digests)
	var out []analyzers.Replies
	for _, d := range run.Digests {
		if setup[d.Op] {
			continue
		}
		r := analyzers.Replies{Key: d.Key, Op: d.Op, Requests: d.Requests, Distinct: d.Distinct, Top: d.Top,
			Input: d.Input, BodyBytes: d.BodyBytes, Request: d.Request, Bodies: d.Bodies,
			Headers: slices.Clone(d.Headers), HeadersVaried: slices.Clone(d.HeadersVaried)}
		// A JSON body's members are inputs as its headers are: one the
		// run sent with the same value in every key is one it never varied.
		if jb, ok := parseJSONBody(requestBody(d.Request)); ok {
			for _, in := range jb.leaves() {
				r.Headers = append(r.Headers, in.name)
				if varied[d.Op+" "+in.name] {
					r.HeadersVaried = append(r.HeadersVaried, in.name)
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// bodyMembersVaried are the JSON body members ("op name") whose value
// differed between the run's keys of an operation.
func bodyMembersVaried(ds []result.Digest) map[string]bool {
	first, varied := map[string]string{}, map[string]bool{}
	for _, d := range ds {
		jb, ok := parseJSONBody(requestBody(d.Request))
		if !ok {
			continue
		}
		for _, in := range jb.leaves() {
			k, v := d.Op+" "+in.name, fmt.Sprint(in.value)
			if was, seen := first[k]; !seen {
				first[k] = v
			} else if was != v {
				varied[k] = true
			}
		}
	}
	return varied
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
// that let requests outlive the timeout while it lived: a hang when it made
// no progress, else a slow-endpoint warning (slowOrStuck).
func crashesOf(run *result.Run) ([]report.Crash, []result.Warning) {
	if e := run.TargetExit; e != nil {
		c := report.Crash{Class: "unknown", Input: "the " + run.Microload + " load (the input that killed it is not " +
			"isolated: see probe fuzz)",
			Endpoint: endpoints(run), Evidence: e.Status}
		if cl, ok := crash.ClassifyExit(e.Status, e.Stderr); ok {
			c.Class, c.Evidence = cl.Class, e.Status+": "+cl.Evidence
		}
		if head := firstLines(e.Stderr, 5); head != "" {
			c.Evidence += "\n" + head
		}
		return []report.Crash{c}, nil
	}
	slow, hang := slowOrStuck(run)
	return hang, slow
}

// endpoints names the run's measured operations: where its findings are.
func endpoints(run *result.Run) string {
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

// interruptedAnalysis is the warning of an analysis that Ctrl-C or
// SIGTERM ended.
var interruptedAnalysis = result.Warning{Kind: "analysis-interrupted",
	Message: "the analysis was interrupted: the findings are those complete before it, not nested, with no unexplained list"}

// analysisContext is the context a run's analysis ends with: ctx, unless
// it ended already (Ctrl-C during the load, whose measures are then
// analysed as they stand; each stack's frames are bounded, so that ends).
func analysisContext(ctx context.Context) context.Context {
	if ctx.Err() != nil {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// AnalyzeProfiles is probe analyze's analyze step on profiles taken
// anywhere (paths name them in the report). With no run to show that
// replies did not change, only work invariant by nature is claimed for
// load time. When ctx ends first, the findings are those complete by
// then, with an analysis-interrupted warning.
func AnalyzeProfiles(ctx context.Context, paths []string, cpu, allocs *profile.Profile, rules []Rule) *report.ProfileFindings {
	res := analyzers.AnalyzeContext(ctx, cpu, allocs, analyzers.Evidence{Endpoint: "(profiles only)"}, rules)
	pf := &report.ProfileFindings{Profiles: paths, Findings: res.Findings, Unexplained: res.Unexplained}
	if res.CPU.Total > 0 {
		pf.CPU = &res.CPU
	}
	if res.Interrupted {
		pf.Warnings = append(pf.Warnings, interruptedAnalysis)
	}
	return pf
}

// ErrTwoAllocationProfiles: the analyzers take one allocation profile.
var ErrTwoAllocationProfiles = errors.New("one allocation profile at a time")

// ReadProfiles reads CPU profiles (merged) and at most one allocation
// profile (ErrTwoAllocationProfiles, wrapped, when more), each within limit
// bytes as stored and as decompressed; the warnings say what was dropped
// from them as invalid (profile-invalid).
func ReadProfiles(paths []string, limit int64) (cpu, allocs *profile.Profile, warnings []result.Warning, err error) {
	var cpus []*profile.Profile
	for _, path := range paths {
		p, invalid, err := readProfile(path, limit)
		if err != nil {
			return nil, nil, nil, err
		}
		if invalid != "" {
			warnings = append(warnings, result.Warning{Kind: "profile-invalid", Message: path + ": " + invalid})
		}
		switch kind := profileKind(p); kind {
		case "cpu":
			cpus = append(cpus, p)
		case "allocs":
			if allocs != nil {
				return nil, nil, nil, fmt.Errorf("%s: %w", path, ErrTwoAllocationProfiles)
			}
			allocs = p
		default:
			return nil, nil, nil, fmt.Errorf("%s: neither a CPU nor an allocation profile (sample types: %s)", path,
				strings.Join(analyzers.ValueTypes(p), ", "))
		}
	}
	if len(cpus) > 0 {
		if cpu, err = profile.Merge(cpus); err != nil {
			return nil, nil, nil, fmt.Errorf("merging the CPU profiles: %v", err)
		}
	}
	return cpu, allocs, warnings, nil
}

// ReadProfile reads a profile file within limit bytes, as stored and as
// decompressed: a file may be a gzip bomb. Invalid samples are dropped
// (pprofio.DropInvalid).
func ReadProfile(path string, limit int64) (*profile.Profile, error) {
	p, _, err := readProfile(path, limit)
	return p, err
}

// readProfile is ReadProfile, and what it dropped as invalid.
func readProfile(path string, limit int64) (*profile.Profile, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	p, _, invalid, err := pprofio.Read(f, limit)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", path, err)
	}
	if len(p.Sample) == 0 && invalid != "" {
		return nil, "", fmt.Errorf("%s: the profile holds no valid samples: %s", path, invalid)
	}
	if len(p.Sample) == 0 {
		return nil, "", fmt.Errorf("%s: the profile holds no samples", path)
	}
	return p, invalid, nil
}

func profileKind(p *profile.Profile) string {
	for _, st := range p.SampleType {
		switch st.Type {
		case "cpu":
			return "cpu"
		case "alloc_space":
			return "allocs"
		}
	}
	return ""
}
