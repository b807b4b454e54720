package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Experiment is the short confirming run probe makes when a finding's class
// rests on thin evidence (DESIGN.md, "The experiment"): the endpoint's
// request sent again in ways that should not change the work (the same key
// again, a query parameter the server ignores) and in ways that should
// (another key of the same endpoint), each variant profiled as the main
// run is, and each finding's CPU per request compared across them.
type Experiment struct {
	Endpoint string              `json:"endpoint"`
	BudgetS  float64             `json:"budget_s"` // --experiment-time
	TookS    float64             `json:"took_s"`   // what the variants took, Prepare and profiles included
	Variants []ExperimentVariant `json:"variants"`
	Findings []ExperimentFinding `json:"findings"`
	// Skipped says why no variant ran (no key to vary, no time); the
	// findings keep the class the analysis gave them.
	Skipped string `json:"skipped,omitempty"`
}

// ExperimentVariant is one run of the experiment.
type ExperimentVariant struct {
	Name string `json:"name"` // same-key, ignored-param, other-key-1, …
	// ShouldMatter: the variant changes the request's input (another key);
	// false for the controls, which must leave the work as it is.
	ShouldMatter bool    `json:"should_matter"`
	Request      string  `json:"request"` // method and path as sent
	DurationS    float64 `json:"duration_s"`
	Requests     int64   `json:"requests"`
	// SlotRequests are the requests sent in each of the variant's seconds.
	SlotRequests []int64 `json:"slot_requests,omitempty"`
	Errors       int64   `json:"errors"`
	CPUSeconds   float64 `json:"cpu_s"` // all the target's CPU in the variant's profile
	// ReplyDigest is the most frequent reply's digest (hex); StableDigest
	// the same reply's with nonces, long hex ids and timestamps masked.
	ReplyDigest  string `json:"reply_digest,omitempty"`
	StableDigest string `json:"reply_stable_digest,omitempty"`
	// DistinctReplies is how many different replies (byte for byte, as
	// sent) the variant's requests got.
	DistinctReplies int `json:"distinct_replies,omitempty"`
	// SameReply: the stable digest equals the reference's (for same-key,
	// the main run's reply to that key; for the others, same-key's).
	SameReply bool   `json:"same_reply"`
	Error     string `json:"error,omitempty"` // the variant could not run or be profiled
}

// ExperimentFinding is what the experiment measured of one finding.
type ExperimentFinding struct {
	Rule        string `json:"rule"`
	ClassBefore string `json:"class_before"`
	Class       string `json:"class"`
	// Verdict: input-independent (load-time), moves-with-input or
	// replies-with-input (cacheable), or inconclusive (class kept).
	Verdict string            `json:"verdict"`
	Frames  []ExperimentFrame `json:"frames"` // the finding's work first, then its own frame
	// Tolerance is the largest relative change of the work's CPU per
	// request that still counts as staying put (sampling noise included).
	Tolerance float64 `json:"tolerance"`
	// SlotNoise is the standard deviation of one second's CPU per request
	// of the work relative to its variant's, pooled over the variants (0:
	// too few seconds to measure it).
	SlotNoise float64 `json:"slot_noise"`
	Why       string  `json:"why"`
}

// ExperimentFrame is one function's CPU per request in each variant, in
// the order of Experiment.Variants (0 for a variant that did not run).
type ExperimentFrame struct {
	Frame           string    `json:"frame"`
	CPUPerRequestMS []float64 `json:"cpu_per_request_ms"`
	Samples         []int     `json:"samples"`
	// SlotCPUPerRequestMS is each variant's seconds' CPU per request, in
	// the order of the variant's SlotRequests (0 for a second of none).
	SlotCPUPerRequestMS [][]float64 `json:"slot_cpu_per_request_ms,omitempty"`
}

// writeExperimentLines are the terminal's lines of the experiment: each
// finding's verdict and its work's CPU per request per variant.
func (r *RunReport) writeExperimentLines(w io.Writer) {
	e := r.Experiment
	if e == nil {
		return
	}
	if e.Skipped != "" {
		fmt.Fprintf(w, "  experiment: not run: %s\n", e.Skipped)
		return
	}
	for _, f := range e.Findings {
		var figs []string
		for i, v := range e.Variants {
			if v.Error == "" && len(f.Frames) > 0 {
				figs = append(figs, fmt.Sprintf("%s %.3f", v.Name, f.Frames[0].CPUPerRequestMS[i]))
			}
		}
		frame := ""
		if len(f.Frames) > 0 {
			frame = f.Frames[0].Frame
		}
		fmt.Fprintf(w, "  experiment: %s %s → %s (%s); ms of CPU a request in %s: %s\n", f.Rule, f.ClassBefore, f.Class, f.Verdict, frame,
			strings.Join(figs, ", "))
	}
}

// sentence is s with its first letter in upper case.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// experimentMarkdown is report.md's section of the experiment ("" when none ran).
func (r *RunReport) experimentMarkdown() string {
	e := r.Experiment
	if e == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Experiment\n\nA short confirming run on %s (budget %.0f s, took %.1f s): the request varied in ways that should not matter and in ways that should.\n\n",
		e.Endpoint, e.BudgetS, e.TookS)
	if e.Skipped != "" {
		b.WriteString("Not run: " + e.Skipped + "\n")
		return b.String()
	}
	t := &Table{Columns: []Column{{Title: "variant"}, {Title: "should matter"}, {Title: "request"}, {Title: "requests", Right: true},
		{Title: "reply"}, {Title: "same reply"}}}
	for _, v := range e.Variants {
		t.AddRow(v.Name, yesNo(v.ShouldMatter), "`"+v.Request+"`", fmt.Sprint(v.Requests), variantReply(v), yesNo(v.SameReply))
	}
	b.WriteString(t.Markdown())
	for _, f := range e.Findings {
		fmt.Fprintf(&b, "\n**%s**: %s → %s (%s). %s%s\n\n", f.Rule, f.ClassBefore, f.Class, f.Verdict, sentence(f.Why), noiseNote(f))
		ft := &Table{Columns: []Column{{Title: "CPU per request (ms)"}}}
		for _, v := range e.Variants {
			ft.Columns = append(ft.Columns, Column{Title: v.Name, Right: true})
		}
		for _, fr := range f.Frames {
			row := []string{"`" + fr.Frame + "`"}
			for i := range e.Variants {
				row = append(row, cpuCell(fr, i))
			}
			ft.AddRow(row...)
		}
		b.WriteString(ft.Markdown())
	}
	return b.String()
}

// experimentHTML is report.html's section of the experiment.
func (r *RunReport) experimentHTML(h int) string {
	e := r.Experiment
	if e == nil {
		return ""
	}
	esc := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, "<h%d>Experiment</h%d><p>A short confirming run on %s (budget %.0f s, took %.1f s): the request varied in ways that should not matter and in ways that should.</p>",
		h, h, esc(e.Endpoint), e.BudgetS, e.TookS)
	if e.Skipped != "" {
		fmt.Fprintf(&b, "<p>Not run: %s</p>", esc(e.Skipped))
		return b.String()
	}
	b.WriteString("<table><tr><th>variant</th><th>should matter</th><th>request</th><th>requests</th><th>reply</th><th>same reply</th></tr>")
	for _, v := range e.Variants {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td><code>%s</code></td><td>%d</td><td>%s</td><td>%s</td></tr>",
			esc(v.Name), yesNo(v.ShouldMatter), esc(v.Request), v.Requests, esc(variantReply(v)), yesNo(v.SameReply))
	}
	b.WriteString("</table>")
	for _, f := range e.Findings {
		fmt.Fprintf(&b, "<p><b>%s</b>: %s → %s (%s). %s%s</p><table><tr><th>CPU per request (ms)</th>", esc(f.Rule), esc(f.ClassBefore), esc(f.Class),
			esc(f.Verdict), esc(sentence(f.Why)), esc(noiseNote(f)))
		for _, v := range e.Variants {
			fmt.Fprintf(&b, "<th>%s</th>", esc(v.Name))
		}
		b.WriteString("</tr>")
		for _, fr := range f.Frames {
			fmt.Fprintf(&b, "<tr><td><code>%s</code></td>", esc(fr.Frame))
			for i := range e.Variants {
				fmt.Fprintf(&b, "<td>%s</td>", cpuCell(fr, i))
			}
			b.WriteString("</tr>")
		}
		b.WriteString("</table>")
	}
	return b.String()
}

// noiseNote is the sentence on the seconds' noise ("" when it was not
// measured), with the tolerance when the verdict had one.
func noiseNote(f ExperimentFinding) string {
	if f.SlotNoise == 0 {
		return ""
	}
	note := fmt.Sprintf(" One second's CPU per request of the work differed from its variant's by ±%.0f%% (a standard deviation)", 100*f.SlotNoise)
	if f.Tolerance > 0 {
		note += fmt.Sprintf("; the tolerance was ±%.0f%%", 100*f.Tolerance)
	}
	return note + "."
}

func variantReply(v ExperimentVariant) string {
	if v.Error != "" {
		return "not run: " + v.Error
	}
	if v.StableDigest == "" {
		return "no reply kept"
	}
	return v.StableDigest
}

func cpuCell(fr ExperimentFrame, i int) string {
	if i >= len(fr.CPUPerRequestMS) {
		return ""
	}
	return fmt.Sprintf("%.3f (%d samples)", fr.CPUPerRequestMS[i], fr.Samples[i])
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
