package report

import (
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
)

// Suite is report.json of `probe all`: the runs of several microloads
// against one target, each also written whole in a folder of its own.
type Suite struct {
	Summary                     // microload "all"
	Errors     map[string]int64 `json:"errors"`
	Ended      string           `json:"ended,omitempty"`
	Runs       []*Run           `json:"runs"`
	Skipped    []Skipped        `json:"skipped,omitempty"` // microloads that found nothing to load on the target
	Thresholds []Threshold      `json:"thresholds,omitempty"`

	latency *hdrhistogram.Histogram
}

// Skipped is a microload that could not run, and why.
type Skipped struct {
	Microload string `json:"microload"`
	Reason    string `json:"reason"`
}

// NewSuite makes the report of `probe all` from the microloads' reports.
func NewSuite(target string, runs []*Run) *Suite {
	s := &Suite{Summary: Summary{Microload: "all", Target: target, Findings: []analyzers.Finding{}, Crashes: []Crash{},
		Warnings: []result.Warning{}},
		Errors: map[string]int64{}, Runs: runs, latency: hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)}
	var calls, errs int64
	var d time.Duration
	for _, r := range runs {
		s.Mode = r.Mode
		s.DurationS += r.DurationS
		d += time.Duration(r.DurationS * float64(time.Second))
		calls += r.Latency.Requests
		errs += r.Latency.Errors
		if r.latency != nil {
			s.latency.Merge(r.latency)
		}
		s.Findings = append(s.Findings, r.Findings...)
		s.Crashes = append(s.Crashes, r.Crashes...)
		for _, w := range r.Warnings {
			s.Warnings = append(s.Warnings, result.Warning{Kind: w.Kind, Message: r.Microload + ": " + w.Message})
		}
		for k, n := range r.Errors {
			s.Errors[r.Microload+": "+k] += n
		}
		if r.Ended != "" && s.Ended == "" {
			s.Ended = r.Microload + ": " + r.Ended
		}
	}
	s.Latency = Summarise(s.latency, calls, errs, d)
	return s
}

// Failed says whether any run failed its checks or ended early.
func (s *Suite) Failed() bool { return s.Latency.Errors > 0 || s.Ended != "" }

// JSON is report.json.
func (s *Suite) JSON() ([]byte, error) { return Marshal(s) }

// Page is report.md, the file the command names; report.html beside it
// draws the runs.
func (s *Suite) Page() string { return "report.md" }

// WriteTable prints each run's table.
func (s *Suite) WriteTable(w io.Writer) {
	for _, r := range s.Runs {
		r.WriteTable(w)
		fmt.Fprintln(w)
	}
	for _, sk := range s.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", sk.Microload, sk.Reason)
	}
	ListThresholds(w, s.Thresholds)
}

func (s *Suite) summaryTable() *Table {
	t := &Table{Columns: []Column{{Title: "microload"}, {Title: "requests", Right: true}, {Title: "ok per second", Right: true},
		{Title: "p50", Right: true}, {Title: "p99", Right: true}, {Title: "errors", Right: true}}}
	for _, r := range s.Runs {
		t.AddRow(r.Microload, fmt.Sprint(r.Latency.Requests), fmt.Sprintf("%.0f", r.Latency.RPS), FmtMS(r.Latency.P50),
			FmtMS(r.Latency.P99), fmt.Sprint(r.Latency.Errors))
	}
	return t
}

// Markdown is report.md: the summary, then each run's report a level down.
func (s *Suite) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# probe all against %s\n\n", s.Target)
	b.WriteString(s.summaryTable().Markdown())
	if len(s.Skipped) > 0 {
		b.WriteString("\nSkipped:\n\n")
		for _, sk := range s.Skipped {
			fmt.Fprintf(&b, "- **%s**: %s\n", sk.Microload, sk.Reason)
		}
	}
	WriteThresholds(&b, s.Thresholds)
	for _, r := range s.Runs {
		md := strings.ReplaceAll(r.Markdown(), "\n## ", "\n### ")
		b.WriteString("\n" + strings.Replace(md, "# ", "## ", 1))
	}
	return b.String()
}

// Files are report.html, the combined latency distribution and each run's
// folder (with its own report.html).
func (s *Suite) Files() (map[string][]byte, error) {
	files := map[string][]byte{"report.html": []byte(s.HTML())}
	if s.latency.TotalCount() > 0 {
		files["latency.hgrm"] = HGRM(s.latency)
	}
	for _, r := range s.Runs {
		sub, err := r.Files()
		if err != nil {
			return nil, err
		}
		js, err := r.JSON()
		if err != nil {
			return nil, err
		}
		sub["report.json"], sub["report.md"] = js, []byte(r.Markdown())
		for name, b := range sub {
			files[path.Join(r.Microload, name)] = b
		}
	}
	return files, nil
}
