// Package rampreport is probe ramp's and probe scale's reports: the knee of
// a ramp and the growth fits of a scale, with their plots.
package rampreport

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/stats"
)

// Ramp is report.json of an arrival-rate ramp (`probe ramp`): per window
// the offered and achieved rate, latencies, sessions in flight and the
// target; the knee and what grew past it; what gave way.
type Ramp struct {
	report.Summary
	Schedule  string       `json:"schedule"` // "steps 50,100/1m0s", "ramp 10:500/5m0s"
	Flows     []RampFlow   `json:"flows"`
	SLOMS     float64      `json:"slo_ms,omitempty"`
	MaxErrors float64      `json:"max_errors"`
	Windows   []RampWindow `json:"windows"`
	Knee      RampKnee     `json:"knee"`
	Steps     []RampStep   `json:"steps"` // each step of each flow, over the sessions up to the knee
	// WallStates divide the wall-clock time of the requests being handled
	// past the knee (at the knee when none was past it) by what they did.
	WallStates  map[string]float64 `json:"wall_states,omitempty"`
	Connections int                `json:"connections"` // opened by probe's users
	Ended       string             `json:"ended"`
	Thresholds  []report.Threshold `json:"thresholds,omitempty"`

	files map[string][]byte
}

// RampFlow is one entry of the mix.
type RampFlow struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"` // scenario or microload
	Weight float64  `json:"weight"`
	Steps  []string `json:"steps"`
}

// RampWindow is one window of the schedule.
type RampWindow struct {
	Window   int     `json:"window"`
	FromS    float64 `json:"from_s"`
	ToS      float64 `json:"to_s"`
	Offered  float64 `json:"offered"`  // sessions a second the schedule asked for
	Achieved float64 `json:"achieved"` // sessions a second that ended well
	Started  int64   `json:"started"`
	Failed   int64   `json:"failed"`
	Dropped  int64   `json:"dropped"` // not started: --max-in-flight sessions were running
	report.Percentiles
	InFlightMean   float64                       `json:"in_flight_mean"`
	InFlightMax    int                           `json:"in_flight_max"`
	InFlightGrowth float64                       `json:"in_flight_growth"` // a second
	LittleL        float64                       `json:"little_l"`         // achieved × mean session time: what in flight should be when it holds
	Target         *RampTarget                   `json:"target,omitempty"`
	Steps          map[string]report.Percentiles `json:"steps,omitempty"` // each step's latency (from its send) in the window's sessions
	Top            []analyzers.ShareOfWork       `json:"top,omitempty"`   // the window's CPU by work
	Holds          bool                          `json:"holds"`
	Why            string                        `json:"why,omitempty"` // why it does not hold
	Errors         map[string]int64              `json:"errors,omitempty"`
	// Settle is the wait for a quiet target before this step (a stepped
	// ramp with --settle; none before the first).
	Settle *report.Settle `json:"settle,omitempty"`
}

// RampTarget is the target process over a window.
type RampTarget struct {
	CPUCores    float64 `json:"cpu_cores"`
	CPUShare    float64 `json:"cpu_share"` // of the cores it may use
	RSSMB       float64 `json:"rss_mb"`
	Threads     int     `json:"threads"`
	FDs         int     `json:"fds"`
	Connections int     `json:"connections"`
}

// RampKnee is where the system stopped holding.
type RampKnee struct {
	Found  bool     `json:"found"`  // a window past the knee was seen
	Rate   float64  `json:"rate"`   // the highest rate held (0: not even the first)
	Window int      `json:"window"` // its window (0: none)
	Says   []string `json:"says"`
}

// RampStep is one step's latency over the windows that held.
type RampStep struct {
	Step  string `json:"step"`
	Calls int64  `json:"calls"`
	report.Percentiles
}

// RampConfig is what the run was asked.
type RampConfig struct {
	Target   string
	Schedule result.Rates
	Flows    []RampFlow
	Rule     stats.KneeRule
	Cores    int // the cores the target may use
}

// RampAnalysis is what the analyzers made of the run (cmd/probe's
// analyzeRamp): the knee, each window's CPU by work, what requests waited
// on past the knee, and the contention findings.
type RampAnalysis struct {
	Knee       stats.Knee
	Tops       [][]analyzers.ShareOfWork // by window
	WallStates map[string]float64
	Findings   []analyzers.Finding
}

// RampOf is the report of an arrival run.
func RampOf(run *result.ArrivalRun, cfg RampConfig, a RampAnalysis) *Ramp {
	r := &Ramp{Summary: report.Summary{Microload: "ramp", Target: cfg.Target, Mode: "arrival", Findings: report.NonNil(a.Findings), Crashes: []report.Crash{},
		Warnings: append([]result.Warning{}, run.Warnings...)},
		Schedule: cfg.Schedule.String(), Flows: cfg.Flows, SLOMS: cfg.Rule.SLO, MaxErrors: cfg.Rule.MaxErrors,
		Connections: run.Opened, Ended: run.Ended, WallStates: a.WallStates, files: map[string][]byte{}}
	for k, v := range run.Raw {
		r.files["profiles/"+k] = v
	}
	ws := run.Windows
	all := hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
	var sessions, failed int64
	steps := LoadSteps(ws)
	for i, w := range ws {
		rw := RampWindow{Window: i + 1, FromS: w.From.Seconds(), ToS: w.To.Seconds(), Offered: w.Rate, Achieved: w.Achieved,
			Started: w.Started, Failed: w.Failed + w.Dropped, Dropped: w.Dropped,
			InFlightMean: w.InFlightMean, InFlightMax: w.InFlightMax, InFlightGrowth: w.InFlightGrowth, Errors: w.Errors}
		if w.Latency.TotalCount() > 0 {
			rw.Percentiles = report.Percentiles{P50: report.Millis(w.Latency.ValueAtQuantile(50)), P95: report.Millis(w.Latency.ValueAtQuantile(95)),
				P99: report.Millis(w.Latency.ValueAtQuantile(99)), Max: report.Millis(w.Latency.Max())}
			rw.LittleL = stats.LittleL(w.Achieved, w.Latency.Mean()/1000)
		}
		if t := w.Target; t != nil {
			rw.Target = &RampTarget{CPUCores: t.CPUCores, RSSMB: float64(t.RSS) / (1 << 20), Threads: t.Threads, FDs: t.FDs,
				Connections: t.Connections}
			if cfg.Cores > 0 {
				rw.Target.CPUShare = t.CPUCores / float64(cfg.Cores)
			}
		}
		if i < len(a.Tops) {
			rw.Top = a.Tops[i]
		}
		for name, h := range w.Steps {
			if h.TotalCount() > 0 {
				if rw.Steps == nil {
					rw.Steps = map[string]report.Percentiles{}
				}
				rw.Steps[name] = report.Percentiles{P50: report.Millis(h.ValueAtQuantile(50)), P95: report.Millis(h.ValueAtQuantile(95)), P99: report.Millis(h.ValueAtQuantile(99)),
					Max: report.Millis(h.Max())}
			}
		}
		rw.Holds, rw.Why = cfg.Rule.Holds(steps[i])
		all.Merge(w.Latency)
		sessions += w.Started + w.Dropped
		failed += w.Failed + w.Dropped
		r.Windows = append(r.Windows, rw)
	}
	var dur time.Duration
	if len(ws) > 0 {
		dur = ws[len(ws)-1].To
	}
	r.DurationS = dur.Seconds()
	r.Latency = report.Summarise(all, sessions, failed, dur)
	knee := a.Knee
	r.Knee = RampKnee{Found: knee.Found, Rate: knee.Rate, Window: knee.Index + 1}
	// Steps over the windows up to the knee (all, when none was passed).
	upTo := len(ws)
	if knee.Found {
		upTo = knee.Index + 1
	}
	stepH := map[string]*hdrhistogram.Histogram{}
	for _, w := range ws[:upTo] {
		for name, h := range w.Steps {
			if stepH[name] == nil {
				stepH[name] = hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
			}
			stepH[name].Merge(h)
		}
	}
	for _, f := range cfg.Flows {
		for _, s := range f.Steps {
			h := stepH[s]
			if h == nil || h.TotalCount() == 0 {
				continue
			}
			r.Steps = append(r.Steps, RampStep{Step: s, Calls: h.TotalCount(), Percentiles: report.Percentiles{P50: report.Millis(h.ValueAtQuantile(50)),
				P95: report.Millis(h.ValueAtQuantile(95)), P99: report.Millis(h.ValueAtQuantile(99)), Max: report.Millis(h.Max())}})
		}
	}
	r.Knee.Says = r.says(knee)
	return r
}

// LoadSteps are the windows as the knee sees them.
func LoadSteps(ws []result.WindowStats) []stats.LoadStep {
	out := make([]stats.LoadStep, len(ws))
	for i, w := range ws {
		n := w.Started + w.Dropped
		errShare, p99 := 0.0, 0.0
		if n > 0 {
			errShare = float64(w.Failed+w.Dropped) / float64(n)
		}
		if w.Latency != nil && w.Latency.TotalCount() > 0 {
			p99 = report.Millis(w.Latency.ValueAtQuantile(99))
		}
		out[i] = stats.LoadStep{Rate: w.Rate, Achieved: w.Achieved, Seconds: (w.To - w.From).Seconds(),
			InFlightMean: w.InFlightMean, InFlightGrowth: w.InFlightGrowth, P99: p99, Errors: errShare, Sessions: n}
	}
	return out
}

// PastWindows are the windows past the knee, or the last two when none
// was passed: where to look for what gave way.
func PastWindows(ws []result.WindowStats, k stats.Knee) []result.WindowStats {
	if k.Found {
		return ws[k.Past:]
	}
	return ws[max(0, len(ws)-2):]
}

// Failed says whether the run went wrong (not whether it found a knee).
func (r *Ramp) Failed() bool { return r.Ended != "" && !strings.HasPrefix(r.Ended, "stopped") }

func (r *Ramp) JSON() ([]byte, error) { return report.Marshal(r) }

func (r *Ramp) Page() string { return "report.html" }

func (r *Ramp) Files() (map[string][]byte, error) {
	return report.PageFiles(r.HTML(), r.files), nil
}

func (r *Ramp) table() *report.Table {
	t := &report.Table{Columns: []report.Column{{Title: "window", Right: true}, {Title: "offered/s", Right: true}, {Title: "achieved/s", Right: true},
		{Title: "failed", Right: true}, {Title: "p50", Right: true}, {Title: "p99", Right: true}, {Title: "in flight", Right: true},
		{Title: "growth/s", Right: true}, {Title: "λW", Right: true}, {Title: "CPU", Right: true}, {Title: "RSS", Right: true}, {Title: "holds"}}}
	waited := false // a stepped ramp that waited for a quiet target between steps
	for _, w := range r.Windows {
		waited = waited || w.Settle != nil
	}
	if waited {
		t.Columns = append([]report.Column{t.Columns[0], {Title: "quiet after", Right: true}}, t.Columns[1:]...)
	}
	for _, w := range r.Windows {
		cpu, rss := "", ""
		if w.Target != nil {
			cpu, rss = fmt.Sprintf("%.0f%%", 100*w.Target.CPUShare), fmt.Sprintf("%.0f MB", w.Target.RSSMB)
		}
		holds := "yes"
		if !w.Holds {
			holds = "no: " + w.Why
		}
		cells := []string{fmt.Sprint(w.Window), rateWords(w.Offered), rateWords(w.Achieved), fmt.Sprint(w.Failed), report.FmtMS(w.P50), report.FmtMS(w.P99),
			fmt.Sprintf("%.1f", w.InFlightMean), fmt.Sprintf("%+.1f", w.InFlightGrowth), fmt.Sprintf("%.1f", w.LittleL), cpu, rss, holds}
		if waited {
			cells = append([]string{cells[0], settleWords(w.Settle)}, cells[1:]...)
		}
		t.AddRow(cells...)
	}
	return t
}

func (r *Ramp) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "ramp against %s: %s\n", r.Target, r.Schedule)
	r.table().Text(w)
	for _, line := range r.Knee.Says {
		fmt.Fprintf(w, "  %s\n", line)
	}
	labels := report.LabelFindings(r.Findings)
	for i, f := range r.Findings {
		l := labels[i]
		fmt.Fprintf(w, "  %s%s. %s%s [%s, %s] — %s\n", l.Indent(), l.Number, f.Rule, l.PartOf(f), f.Class, f.Severity,
			f.Evidence)
	}
	if r.Ended != "" {
		fmt.Fprintf(w, "  ended: %s\n", r.Ended)
	}
	report.ListThresholds(w, r.Thresholds)
	report.ListWarnings(w, r.Warnings)
}

func (r *Ramp) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# probe ramp against %s\n\n%s", r.Target, r.Schedule)
	if r.SLOMS > 0 {
		fmt.Fprintf(&b, ", SLO p99 %s", report.FmtMS(r.SLOMS))
	}
	var flows []string
	for _, f := range r.Flows {
		flows = append(flows, fmt.Sprintf("%s ×%g (%s)", f.Name, f.Weight, strings.Join(f.Steps, " → ")))
	}
	fmt.Fprintf(&b, "; the mix: %s.\n\n", strings.Join(flows, ", "))
	b.WriteString("## The knee\n\n")
	for _, line := range r.Knee.Says {
		b.WriteString("- " + line + "\n")
	}
	b.WriteString("\n## Windows\n\nLatency of a session from its scheduled start; in flight: sessions started and not ended " +
		"(sampled every 100 ms), their growth a second, and λW (achieved rate × mean session time, Little's law).\n\n")
	b.WriteString(r.table().Markdown())
	if len(r.Steps) > 0 {
		t := &report.Table{Columns: []report.Column{{Title: "step"}, {Title: "calls", Right: true}, {Title: "p50", Right: true},
			{Title: "p95", Right: true}, {Title: "p99", Right: true}}}
		for _, s := range r.Steps {
			t.AddRow(s.Step, fmt.Sprint(s.Calls), report.FmtMS(s.P50), report.FmtMS(s.P95), report.FmtMS(s.P99))
		}
		b.WriteString("\n## Steps, up to the knee\n\n" + t.Markdown())
	}
	if len(r.Findings) > 0 {
		b.WriteString("\n## Findings\n\n")
		labels := report.LabelFindings(r.Findings)
		for i, f := range r.Findings {
			l := labels[i]
			item := l.Number + "."
			if l.Depth > 0 {
				item = "- " + l.Number
			}
			fmt.Fprintf(&b, "%s%s **%s**%s (%s, %s): %s. Fix: %s\n", l.Indent(), item, f.Rule, l.PartOf(f), f.Class,
				f.Severity, f.Evidence, f.Suggestion)
		}
	}
	if len(r.WallStates) > 0 {
		var parts []string
		for _, k := range byShare(r.WallStates) {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", k, 100*r.WallStates[k]))
		}
		b.WriteString("\n## Where requests spent their wall time past the knee (fgprof)\n\n" + strings.Join(parts, ", ") + "\n")
	}
	if r.Ended != "" {
		fmt.Fprintf(&b, "\nThe run ended early: %s.\n", r.Ended)
	}
	report.WriteThresholds(&b, r.Thresholds)
	report.WriteWarnings(&b, r.Warnings)
	return b.String()
}

// settleWords is a wait for a quiet target in a table cell.
func settleWords(st *report.Settle) string {
	switch {
	case st == nil:
		return "–"
	case !st.Quiet:
		return fmt.Sprintf("%.0f s, busy", st.WaitedS)
	}
	return fmt.Sprintf("%.0f s", st.WaitedS)
}

func byShare(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return m[out[i]] > m[out[j]] || m[out[i]] == m[out[j]] && out[i] < out[j] })
	return out
}

var _ report.Document = (*Ramp)(nil)
