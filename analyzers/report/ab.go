package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"probe/analyzers"
	"probe/analyzers/stats"
	"probe/flamegraphs"
	"probe/probes"
)

// RunData is one measured run of one microload on one side, as read back
// from its report folder: `probe ab` writes the folders and reads them as
// `probe compare` does, so both say the same about the same runs.
type RunData struct {
	Dir    string
	Report *Report
	CPU    *profile.Profile
	Allocs *profile.Profile
	Curve  []CurvePoint // latency by percentile, from latency.hgrm
}

// CurvePoint is one line of an HdrHistogram percentile distribution.
type CurvePoint struct {
	Percentile float64 // 0–100
	Ms         float64
}

// LoadRun reads a report folder of one microload run.
func LoadRun(dir string) (*RunData, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a probe report folder: %v", dir, err)
	}
	var r Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: report.json: %v", dir, err)
	}
	if r.Fuzz != nil || r.Microload == "" {
		return nil, fmt.Errorf("%s: report.json is not a microload run", dir)
	}
	d := &RunData{Dir: dir, Report: &r}
	for _, p := range []struct {
		file string
		dst  **profile.Profile
	}{{"cpu.pb.gz", &d.CPU}, {"allocs.pb.gz", &d.Allocs}} {
		b, err := os.ReadFile(filepath.Join(dir, p.file))
		if err != nil {
			continue // not profiled: the profile metrics are left out
		}
		prof, err := profile.ParseData(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %s is not a pprof profile: %v", dir, p.file, err)
		}
		*p.dst = prof
	}
	d.Curve, _ = readCurve(filepath.Join(dir, "latency.hgrm"))
	return d, nil
}

// LoadRuns reads a folder of one run or of `probe all` (a subfolder per
// microload), keyed by microload.
func LoadRuns(dir string) (map[string]*RunData, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a probe report folder: %v", dir, err)
	}
	var top struct {
		Microload string
		Runs      []struct{ Microload string }
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%s: report.json: %v", dir, err)
	}
	out := map[string]*RunData{}
	if len(top.Runs) == 0 {
		d, err := LoadRun(dir)
		if err != nil {
			return nil, err
		}
		out[d.Report.Microload] = d
		return out, nil
	}
	for _, sub := range top.Runs {
		d, err := LoadRun(filepath.Join(dir, sub.Microload))
		if err != nil {
			return nil, err
		}
		out[sub.Microload] = d
	}
	return out, nil
}

func readCurve(path string) ([]CurvePoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []CurvePoint
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		v, err1 := strconv.ParseFloat(fs[0], 64)
		p, err2 := strconv.ParseFloat(fs[1], 64)
		if err1 != nil || err2 != nil || p >= 1 {
			continue
		}
		out = append(out, CurvePoint{Percentile: 100 * p, Ms: v}) // written in ms (PercentilesPrint scaled by 1000)
	}
	return out, sc.Err()
}

// Metric is one figure compared between versions.
type Metric struct {
	Name         string
	HigherBetter bool
	Value        func(*RunData) float64 // NaN when the run cannot tell
}

// Metrics are what before/after reports compare (DESIGN.md's and more).
var Metrics = []Metric{
	{"rps", true, func(d *RunData) float64 { return d.Report.Latency.RPS }},
	{"p50_ms", false, func(d *RunData) float64 { return d.Report.Latency.P50 }},
	{"p95_ms", false, func(d *RunData) float64 { return d.Report.Latency.P95 }},
	{"p99_ms", false, func(d *RunData) float64 { return d.Report.Latency.P99 }},
	{"cpu_per_req_ms", false, cpuPerRequest},
	{"alloc_bytes_per_req", false, func(d *RunData) float64 { return perRequest(d, profileTotal(d, d.Allocs, "alloc_space")) }},
	{"allocs_per_req", false, func(d *RunData) float64 { return perRequest(d, profileTotal(d, d.Allocs, "alloc_objects")) }},
}

// profileTotal is a profile's total, unless the run warned that its
// profiles miss work done in the target's child processes: a load-time
// fixture's note queries allocate in workers, and a profile-based cost of
// ~0 would read as a 100% saving.
func profileTotal(d *RunData, p *profile.Profile, typ string) float64 {
	for _, w := range d.Report.Warnings {
		if w.Kind == "profile-partial" {
			return math.NaN()
		}
	}
	return analyzers.SampleTotal(p, typ)
}

// cpuPerRequest is the target's CPU per request: from its process figures
// (all its processes) when probe started it, else from its CPU profile.
func cpuPerRequest(d *RunData) float64 {
	if p := d.Report.TargetProcess; p != nil && p.CPUSeconds > 0 {
		return perRequest(d, 1000*p.CPUSeconds)
	}
	return perRequest(d, profileTotal(d, d.CPU, "cpu")/1e6)
}

func perRequest(d *RunData, total float64) float64 {
	n := d.Report.Latency.Requests
	if n == 0 || math.IsNaN(total) {
		return math.NaN()
	}
	return total / float64(n)
}

// AB is the before/after report (DESIGN.md's "Before/after JSON" and more).
type AB struct {
	Before      string                 `json:"before"`
	After       string                 `json:"after"`
	Runs        int                    `json:"runs"`
	Comparisons []ABComparison         `json:"comparisons"`
	Fixed       []analyzers.RuleChange `json:"fixed"`
	Regressed   []analyzers.RuleChange `json:"regressed"`

	Microloads []string           `json:"microloads"`
	Geomean    map[string]float64 `json:"geomean"` // per metric, of the after/before ratios
	HotPaths   []HotPath          `json:"hot_paths"`
	Order      string             `json:"order,omitempty"` // how the runs were interleaved
	Failures   []SideFailure      `json:"failures"`
	Warnings   []probes.Warning   `json:"warnings"`
	Files      []string           `json:"files,omitempty"`

	curves map[string][2][][]CurvePoint // microload → before/after → runs
	files  map[string][]byte
}

// ABComparison is one metric of one microload.
type ABComparison struct {
	Microload    string   `json:"microload"`
	Metric       string   `json:"metric"`
	Before       float64  `json:"before"`
	After        float64  `json:"after"`
	Ratio        float64  `json:"ratio"`
	CI95         Interval `json:"ci95"`
	PValue       *float64 `json:"p_value"` // null: not tested (single runs)
	Significant  bool     `json:"significant"`
	Verdict      string   `json:"verdict"` // better, worse or ~
	HigherBetter bool     `json:"higher_is_better"`
	BeforeCI     Interval `json:"before_ci95"`
	AfterCI      Interval `json:"after_ci95"`
	N            [2]int   `json:"n"`
	Note         string   `json:"note,omitempty"`
}

// HotPath is where a microload's CPU moved between the versions.
type HotPath struct {
	Microload string                `json:"microload"`
	Gainers   []analyzers.FuncDelta `json:"gainers"` // cumulative share grew
	Losers    []analyzers.FuncDelta `json:"losers"`  // cumulative share shrank
}

// SideFailure is a version that failed to start or died during a run.
type SideFailure struct {
	Side      string `json:"side"` // before or after
	Run       int    `json:"run"`
	Microload string `json:"microload,omitempty"`
	Reason    string `json:"reason"`
}

// MinRuns is the fewest runs a side needs for a 95% confidence interval
// of a median and a U test that can reach p < 0.05.
const MinRuns = 6

// BuildAB compares the runs of each microload, before against after.
func BuildAB(beforeName, afterName string, before, after map[string][]*RunData, failures []SideFailure) *AB {
	ab := &AB{Before: beforeName, After: afterName, Comparisons: []ABComparison{}, Fixed: []analyzers.RuleChange{},
		Regressed: []analyzers.RuleChange{}, Geomean: map[string]float64{}, HotPaths: []HotPath{}, Failures: failures,
		Warnings: []probes.Warning{}, curves: map[string][2][][]CurvePoint{}, files: map[string][]byte{}}
	if ab.Failures == nil {
		ab.Failures = []SideFailure{}
	}
	for m := range before {
		if len(after[m]) > 0 {
			ab.Microloads = append(ab.Microloads, m)
		}
	}
	sort.Strings(ab.Microloads)
	for m := range before {
		if len(after[m]) == 0 {
			ab.Warnings = append(ab.Warnings, probes.Warning{Kind: "one-sided", Message: fmt.Sprintf("%s was measured before only: nothing to compare", m)})
		}
	}
	for m := range after {
		if len(before[m]) == 0 {
			ab.Warnings = append(ab.Warnings, probes.Warning{Kind: "one-sided", Message: fmt.Sprintf("%s was measured after only: nothing to compare", m)})
		}
	}
	ratios := map[string][]float64{}
	for _, m := range ab.Microloads {
		b, a := before[m], after[m]
		ab.Runs = max(ab.Runs, min(len(b), len(a)))
		for _, metric := range Metrics {
			bv, av := values(b, metric), values(a, metric)
			if len(bv) == 0 || len(av) == 0 {
				if len(bv)+len(av) > 0 {
					ab.Warnings = append(ab.Warnings, probes.Warning{Kind: "not-comparable", Message: fmt.Sprintf(
						"%s %s is left out: one side has no figure (not profiled, or its profile misses work done in child processes)", m, metric.Name)})
				}
				continue
			}
			c := stats.Compare(bv, av)
			row := ABComparison{Microload: m, Metric: metric.Name, Before: c.Before.Median, After: c.After.Median,
				Ratio: c.Ratio, CI95: c.CI95, Significant: c.Significant, HigherBetter: metric.HigherBetter,
				BeforeCI: Interval{c.Before.Lo, c.Before.Hi}, AfterCI: Interval{c.After.Lo, c.After.Hi},
				N: [2]int{len(bv), len(av)}, Note: c.Note, Verdict: "~"}
			if !math.IsNaN(c.P) {
				p := c.P
				row.PValue = &p
			}
			if c.Significant && c.Ratio != 1 {
				row.Verdict = "worse"
				if (c.Ratio > 1) == metric.HigherBetter {
					row.Verdict = "better"
				}
			}
			ab.Comparisons = append(ab.Comparisons, finite(row))
			ratios[metric.Name] = append(ratios[metric.Name], c.Ratio)
		}
		var fb, fa [][]analyzers.Finding
		for _, d := range b {
			fb = append(fb, d.Report.Findings)
		}
		for _, d := range a {
			fa = append(fa, d.Report.Findings)
		}
		fixed, regressed := analyzers.FindingChanges(m, fb, fa)
		ab.Fixed = append(ab.Fixed, fixed...)
		ab.Regressed = append(ab.Regressed, regressed...)
		ab.addHotPath(m, b, a)
		var cb, ca [][]CurvePoint
		for _, d := range b {
			cb = append(cb, d.Curve)
		}
		for _, d := range a {
			ca = append(ca, d.Curve)
		}
		ab.curves[m] = [2][][]CurvePoint{cb, ca}
	}
	for name, rs := range ratios {
		if g := stats.Geomean(rs); !math.IsNaN(g) {
			ab.Geomean[name] = g
		}
	}
	if ab.Runs == 1 {
		ab.Warnings = append(ab.Warnings, probes.Warning{Kind: "single-runs", Message: "one run a side: the figures are shown side by side and no change is claimed significant"})
	} else if ab.Runs > 0 && ab.Runs < MinRuns {
		ab.Warnings = append(ab.Warnings, probes.Warning{Kind: "few-runs", Message: fmt.Sprintf(
			"%d runs a side: %d is the least for a 95%% confidence interval of a median, and below it small changes cannot reach p < 0.05", ab.Runs, MinRuns)})
	}
	sort.Strings(ab.Files)
	return ab
}

// finite replaces a median or ratio JSON cannot hold (NaN, or ±Inf when
// the before median is 0) with 0.
func finite(c ABComparison) ABComparison {
	for _, v := range []*float64{&c.Before, &c.After, &c.Ratio} {
		if math.IsInf(*v, 0) || math.IsNaN(*v) {
			*v = 0
		}
	}
	return c
}

// Interval is a confidence interval; a side it cannot bound (too few
// runs, or a ratio over an interval reaching 0) is ±Inf, null in JSON.
type Interval [2]float64

func (iv Interval) MarshalJSON() ([]byte, error) {
	out := make([]any, 2)
	for i, v := range iv {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			out[i] = v
		}
	}
	return json.Marshal(out)
}

func values(runs []*RunData, m Metric) []float64 {
	var out []float64
	for _, d := range runs {
		if v := m.Value(d); !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

// addHotPath merges each side's CPU profiles, lists the functions whose
// share moved, and draws flame-diff-<microload>.html.
func (ab *AB) addHotPath(m string, b, a []*RunData) {
	mb, ma := mergeCPU(b), mergeCPU(a)
	if mb == nil || ma == nil {
		return
	}
	gainers, losers := analyzers.HotPathDelta(mb, ma, "cpu", 8)
	ab.HotPaths = append(ab.HotPaths, HotPath{Microload: m, Gainers: nonNil(gainers), Losers: nonNil(losers)})
	t, err := flamegraphs.FoldDiff(mb, ma, "cpu")
	if err != nil {
		return
	}
	var buf bytes.Buffer
	title := fmt.Sprintf("%s: CPU of %s against %s (red: a larger share after)", m, ab.After, ab.Before)
	if flamegraphs.WriteHTML(&buf, t, flamegraphs.Options{Title: title}) == nil {
		name := "flame-diff-" + m + ".html"
		ab.files[name] = buf.Bytes()
		ab.Files = append(ab.Files, name)
	}
}

func nonNil(ds []analyzers.FuncDelta) []analyzers.FuncDelta {
	if ds == nil {
		return []analyzers.FuncDelta{}
	}
	return ds
}

func mergeCPU(runs []*RunData) *profile.Profile {
	var ps []*profile.Profile
	for _, d := range runs {
		if d.CPU != nil {
			ps = append(ps, d.CPU)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	merged, err := profile.Merge(ps)
	if err != nil {
		return ps[0]
	}
	return merged
}

// Significant lists the comparisons that changed, better or worse.
func (ab *AB) Significant() []ABComparison {
	var out []ABComparison
	for _, c := range ab.Comparisons {
		if c.Significant {
			out = append(out, c)
		}
	}
	return out
}
