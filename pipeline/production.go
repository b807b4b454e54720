package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/probehq/probe/result"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/flamegraphs"
	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/probes/production"
	"github.com/probehq/probe/report"
)

// Production profiles: probe analyze --from, probe compare --from and
// probe all --production read a fleet's merged profiles from its
// continuous profiler (probes/production) and put them through the same
// analyzers, flame graphs and comparison as profiles probe took itself.

// AnalyzeProduction analyzes a fleet's merged profile p fetched by q from
// src: CPU and allocation profiles through the analyzers, any type drawn
// as a flame graph with its top functions.
func AnalyzeProduction(ctx context.Context, src *production.Source, q production.Query, p *profile.Profile,
	rules []Rule) *report.ProductionFindings {
	typeID, _ := q.TypeID(src.Engine)
	label := fmt.Sprintf("%s %s %s", src, q.Selector(src.Engine), typeID)
	var cpu, allocs *profile.Profile
	switch profileKind(p) {
	case "cpu":
		cpu = p
	case "allocs":
		allocs = p
	}
	pf := &report.ProfileFindings{Profiles: []string{label}, Findings: []analyzers.Finding{}}
	if cpu != nil || allocs != nil {
		pf = AnalyzeProfiles(ctx, []string{label}, cpu, allocs, rules)
	}
	code := frames.Code{MainModule: frames.MainModule(p)}
	out := &report.ProductionFindings{ProfileFindings: pf, Source: src.String(), Service: q.Service, Selector: q.Selector(src.Engine),
		Type: typeID, Start: stamp(q.Start), End: stamp(q.End), Top: TopFunctions(p, code, 10), Raw: map[string][]byte{}}
	title := fmt.Sprintf("%s of %s (%s to %s)", "%s", q.Service, out.Start, out.End)
	switch {
	case len(pf.Warnings) > 0 && ctx.Err() != nil: // interrupted: no flame graph
	case cpu != nil || allocs != nil:
		for name, b := range flameGraphs(cpu, allocs, pf.Findings, title, code) {
			out.Raw[name] = b
		}
	default:
		if t, err := flamegraphs.Fold(p, flamegraphs.FoldOptions{SampleIndex: lastType(p), Code: code}); err == nil {
			var b bytes.Buffer
			if flamegraphs.WriteHTML(&b, t, flamegraphs.Options{Title: fmt.Sprintf(title, t.Sample)}) == nil {
				out.Raw["flame.html"] = b.Bytes()
			}
		}
	}
	var raw bytes.Buffer
	if p.Write(&raw) == nil {
		out.Raw["production.pb.gz"] = raw.Bytes()
	}
	return out
}

// TopFunctions are the n functions of the target's own code with the
// largest flat share of p's last sample type (all code when none is its
// own: a profile without file names).
func TopFunctions(p *profile.Profile, code frames.Code, n int) []report.TopFunction {
	idx := len(p.SampleType) - 1
	flat, cum := map[string]float64{}, map[string]float64{}
	files := map[string]string{}
	var total float64
	for _, s := range p.Sample {
		v := float64(s.Value[idx])
		total += v
		seen := map[string]bool{}
		leaf := true
		for _, loc := range s.Location {
			for i := range loc.Line { // innermost (inlined) first
				fn := loc.Line[i].Function
				if fn == nil {
					continue
				}
				name := frames.DisplayName(fn.Name)
				files[name] = fn.Filename
				if leaf {
					flat[name] += v
					leaf = false
				}
				if !seen[name] {
					seen[name] = true
					cum[name] += v
				}
			}
		}
	}
	if total == 0 {
		return []report.TopFunction{}
	}
	var all, own []report.TopFunction
	for name, c := range cum {
		t := report.TopFunction{Function: name, Kind: code.Kind(name, files[name]), Flat: flat[name] / total, Cum: c / total}
		if t.Flat == 0 {
			continue
		}
		all = append(all, t)
		if t.Kind == frames.Own {
			own = append(own, t)
		}
	}
	if len(own) == 0 {
		own = all
	}
	sort.Slice(own, func(i, j int) bool {
		if own[i].Flat != own[j].Flat {
			return own[i].Flat > own[j].Flat
		}
		return own[i].Function < own[j].Function
	})
	return append([]report.TopFunction{}, own[:min(n, len(own))]...)
}

func lastType(p *profile.Profile) string { return p.SampleType[len(p.SampleType)-1].Type }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Window is one side's time range and selector in a production compare.
type Window struct {
	Labels     string
	Start, End time.Time
}

// FetchWindows splits each side's range into n consecutive windows and
// fetches each window's merged profile, one by one, reduced into into as
// it comes (CompareSide.Add): the samples of the comparison. A window
// with no samples is left out with a warning, and so are a window's
// invalid samples; a side left with fewer than two windows cannot be
// tested.
func FetchWindows(ctx context.Context, src *production.Source, q production.Query, side Window, n int,
	into *CompareSide) ([]result.Warning, error) {
	if n < 2 {
		return nil, fmt.Errorf("--windows %d: want 2 or more (each side's samples)", n)
	}
	if !side.End.After(side.Start) {
		return nil, fmt.Errorf("empty time range: %s to %s", stamp(side.Start), stamp(side.End))
	}
	step := side.End.Sub(side.Start) / time.Duration(n)
	var warnings []result.Warning
	var empty []string
	held := 0
	for i := range n {
		wq := q
		wq.Labels = joinLabels(q.Labels, side.Labels)
		wq.Start = side.Start.Add(time.Duration(i) * step)
		wq.End = wq.Start.Add(step)
		if i == n-1 {
			wq.End = side.End
		}
		p, invalid, err := src.FetchChecked(ctx, wq)
		if errors.Is(err, production.ErrNoSamples) {
			empty = append(empty, stamp(wq.Start))
			continue
		}
		if err != nil {
			return nil, err
		}
		if invalid != "" {
			warnings = append(warnings, result.Warning{Kind: "profile-invalid", Message: fmt.Sprintf("%s %s, the window from %s: %s",
				src, wq.Selector(src.Engine), stamp(wq.Start), invalid)})
		}
		if err := into.Add(p); err != nil {
			return nil, err
		}
		held++
	}
	if held < 2 {
		return nil, fmt.Errorf("%s %s: %d of %d windows from %s to %s hold samples: want 2 or more",
			src, q.Selector(src.Engine), held, n, stamp(side.Start), stamp(side.End))
	}
	if len(empty) > 0 {
		name := side.Labels
		if name == "" {
			name = stamp(side.Start) + " to " + stamp(side.End)
		}
		warnings = append(warnings, result.Warning{Kind: "empty-windows",
			Message: fmt.Sprintf("%s: %d of %d windows held no samples (starting %s)", name, len(empty), n, strings.Join(empty, ", "))})
	}
	return warnings, nil
}

func joinLabels(a, b string) string {
	trim := func(s string) string {
		return strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "{"), "}"))
	}
	var ms []string
	for _, s := range []string{trim(a), trim(b)} {
		if s != "" {
			ms = append(ms, s)
		}
	}
	return strings.Join(ms, ",")
}

// WeighByFleet sets on each run the fleet's profile the findings are
// weighed against and each finding's share of the fleet's CPU: the
// fleet's samples whose stack holds the finding's work (the first of its
// frames, where its rule matched) under its own frame (where the fix
// goes), either alone when it names one only. Not the whole chain: the
// chain is the run's heaviest path into the work, and the fleet reaches
// the same work by its other paths too. A finding that names neither
// gets no share.
func WeighByFleet(fleet *profile.Profile, src *production.Source, q production.Query, runs []*report.Run) {
	stacks, total := fleetStacks(fleet)
	for _, r := range runs {
		p := &report.Production{Source: src.String(), Service: q.Service, Start: stamp(q.Start), End: stamp(q.End),
			Shares: make([]*float64, len(r.Findings))}
		for i, f := range r.Findings {
			var want []string
			for _, fn := range []string{first(f.Frames), f.OwnFrame} {
				if fn != "" && fn != "…" {
					want = append(want, fn)
				}
			}
			if len(want) == 0 || total == 0 {
				continue
			}
			var under float64
			for _, st := range stacks {
				if holdsAll(st.funcs, want) {
					under += st.value
				}
			}
			share := under / total
			p.Shares[i] = &share
		}
		r.Production = p
	}
}

type fleetStack struct {
	funcs map[string]bool
	value float64
}

// fleetStacks are the CPU profile's stacks as sets of function names.
func fleetStacks(p *profile.Profile) ([]fleetStack, float64) {
	idx, err := p.SampleIndexByName("cpu")
	if err != nil {
		idx = len(p.SampleType) - 1
	}
	var out []fleetStack
	var total float64
	for _, s := range p.Sample {
		st := fleetStack{funcs: map[string]bool{}, value: float64(s.Value[idx])}
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function != nil {
					st.funcs[frames.DisplayName(ln.Function.Name)] = true
				}
			}
		}
		total += st.value
		out = append(out, st)
	}
	return out, total
}

func holdsAll(set map[string]bool, want []string) bool {
	for _, fn := range want {
		if !set[frames.DisplayName(fn)] {
			return false
		}
	}
	return true
}

func first(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}
