// Package abreport is probe ab's and probe compare's report: the run folders
// they read and the before/after comparison.
package abreport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/compare"
	"github.com/probehq/probe/lib/pprofio"
)

// RunData is one measured run of one microload on one side, as read back
// from its report folder: `probe ab` writes the folders and reads them as
// `probe compare` does, so both say the same about the same runs.
type RunData struct {
	Dir    string
	Report *report.Run
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
	var r report.Run
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: report.json: %v", dir, err)
	}
	if r.Mode == "fuzz" || r.Microload == "" {
		return nil, fmt.Errorf("%s: report.json is not a microload run", dir)
	}
	d := &RunData{Dir: dir, Report: &r}
	for _, p := range []struct {
		file string
		dst  **profile.Profile
	}{{"cpu.pb.gz", &d.CPU}, {"allocs.pb.gz", &d.Allocs}} {
		f, err := os.Open(filepath.Join(dir, p.file))
		if err != nil {
			continue // not profiled: the profile metrics are left out
		}
		prof, _, _, err := pprofio.Read(f, 0) // invalid samples dropped
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", dir, p.file, err)
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

// metricValues read a run's figure of each metric from its folder; NaN
// when the run cannot tell.
var metricValues = []struct {
	compare.Metric
	value func(*RunData) float64
}{
	{compare.Metric{Name: "rps", HigherBetter: true}, func(d *RunData) float64 { return d.Report.Latency.RPS }},
	{compare.Metric{Name: "p50_ms"}, func(d *RunData) float64 { return d.Report.Latency.P50 }},
	{compare.Metric{Name: "p95_ms"}, func(d *RunData) float64 { return d.Report.Latency.P95 }},
	{compare.Metric{Name: "p99_ms"}, func(d *RunData) float64 { return d.Report.Latency.P99 }},
	{compare.Metric{Name: "cpu_per_req_ms"}, cpuPerRequest},
	{compare.Metric{Name: "alloc_bytes_per_req"},
		func(d *RunData) float64 { return perRequest(d, profileTotal(d, d.Allocs, "alloc_space")) }},
	{compare.Metric{Name: "allocs_per_req"}, func(d *RunData) float64 { return perRequest(d, profileTotal(d, d.Allocs, "alloc_objects")) }},
}

// Metrics are what before/after reports compare (DESIGN.md's and more), in
// the order of their tables.
func Metrics() []compare.Metric {
	out := make([]compare.Metric, len(metricValues))
	for i, m := range metricValues {
		out[i] = m.Metric
	}
	return out
}

// Figures are the run's metrics, findings and CPU profile, for a comparison.
func (d *RunData) Figures() compare.RunFigures {
	f := compare.RunFigures{Values: map[string]float64{}, Findings: d.Report.Findings, CPU: d.CPU}
	for _, m := range metricValues {
		f.Values[m.Name] = m.value(d)
	}
	return f
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
	Before      string               `json:"before"`
	After       string               `json:"after"`
	Runs        int                  `json:"runs"`
	Comparisons []ABComparison       `json:"comparisons"`
	Fixed       []compare.RuleChange `json:"fixed"`
	Regressed   []compare.RuleChange `json:"regressed"`

	Microloads []string           `json:"microloads"`
	Geomean    map[string]float64 `json:"geomean"` // per metric, of the after/before ratios
	HotPaths   []HotPath          `json:"hot_paths"`
	Order      string             `json:"order,omitempty"` // how the runs were interleaved
	Failures   []SideFailure      `json:"failures"`
	Warnings   []result.Warning   `json:"warnings"`
	Thresholds []report.Threshold `json:"thresholds,omitempty"`
	FileList   []string           `json:"files,omitempty"`

	curves map[string][2][][]CurvePoint // microload → before/after → runs
	files  map[string][]byte
}

// ABComparison is one metric of one microload.
type ABComparison struct {
	Microload    string          `json:"microload"`
	Metric       string          `json:"metric"`
	Before       float64         `json:"before"`
	After        float64         `json:"after"`
	Ratio        float64         `json:"ratio"`
	CI95         report.Interval `json:"ci95"`
	PValue       *float64        `json:"p_value"` // null: not tested (single runs)
	Significant  bool            `json:"significant"`
	Verdict      string          `json:"verdict"` // better, worse or ~
	HigherBetter bool            `json:"higher_is_better"`
	BeforeCI     report.Interval `json:"before_ci95"`
	AfterCI      report.Interval `json:"after_ci95"`
	N            [2]int          `json:"n"`
	Note         string          `json:"note,omitempty"`
}

// HotPath is where a microload's CPU moved between the versions.
type HotPath struct {
	Microload string              `json:"microload"`
	Gainers   []compare.FuncDelta `json:"gainers"` // cumulative share grew
	Losers    []compare.FuncDelta `json:"losers"`  // cumulative share shrank
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

// NewAB is the before/after report of comparisons the analyzers made.
// curves are each microload's latency distributions per side and run;
// files are the differential flame graphs by name; oneSided names the
// microloads only one side measured.
func NewAB(beforeName, afterName string, comps []compare.Comparison, curves map[string][2][][]CurvePoint,
	files map[string][]byte, failures []SideFailure, oneSided []result.Warning) *AB {
	ab := &AB{Before: beforeName, After: afterName, Comparisons: []ABComparison{}, Fixed: []compare.RuleChange{},
		Regressed: []compare.RuleChange{}, Geomean: compare.Geomeans(comps), HotPaths: []HotPath{}, Failures: report.NonNil(failures),
		Warnings: append([]result.Warning{}, oneSided...), curves: curves, files: files}
	for _, c := range comps {
		ab.Microloads = append(ab.Microloads, c.Microload)
		ab.Runs = max(ab.Runs, c.Runs)
		for _, name := range c.Missing {
			ab.Warnings = append(ab.Warnings, result.Warning{Kind: "not-comparable", Message: fmt.Sprintf(
				"%s %s is left out: one side has no figure (not profiled, or its profile misses work done in child processes)", c.Microload, name)})
		}
		for _, ch := range c.Changes {
			row := ABComparison{Microload: c.Microload, Metric: ch.Name, Before: ch.Before.Median, After: ch.After.Median,
				Ratio: ch.Ratio, CI95: ch.CI95, Significant: ch.Significant, HigherBetter: ch.HigherBetter,
				BeforeCI: report.Interval{ch.Before.Lo, ch.Before.Hi}, AfterCI: report.Interval{ch.After.Lo, ch.After.Hi},
				N: ch.N, Note: ch.Note, Verdict: ch.Verdict}
			if !math.IsNaN(ch.P) {
				p := ch.P
				row.PValue = &p
			}
			ab.Comparisons = append(ab.Comparisons, finite(row))
		}
		ab.Fixed = append(ab.Fixed, c.Fixed...)
		ab.Regressed = append(ab.Regressed, c.Regressed...)
		if c.Before != nil && c.After != nil {
			ab.HotPaths = append(ab.HotPaths, HotPath{Microload: c.Microload, Gainers: report.NonNil(c.Gainers), Losers: report.NonNil(c.Losers)})
		}
	}
	if ab.Runs == 1 {
		ab.Warnings = append(ab.Warnings, result.Warning{Kind: "single-runs", Message: "one run a side: the figures are shown " +
			"side by side and no change is claimed significant"})
	} else if ab.Runs > 0 && ab.Runs < MinRuns {
		ab.Warnings = append(ab.Warnings, result.Warning{Kind: "few-runs", Message: fmt.Sprintf(
			"%d runs a side: %d is the least for a 95%% confidence interval of a median, and below it small changes cannot reach p < 0.05",
			ab.Runs, MinRuns)})
	}
	for name := range files {
		ab.FileList = append(ab.FileList, name)
	}
	sort.Strings(ab.FileList)
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
