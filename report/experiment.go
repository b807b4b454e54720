package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/probehq/probe/analyzers/verdict"
	"github.com/probehq/probe/lib/machine"
)

// The experiment's data (its variants, its findings and their frames) is
// the verdict's: package verdict judges it, the report writes it under
// these names.
type (
	Experiment        = verdict.Experiment
	ExperimentVariant = verdict.Variant
	ExperimentFinding = verdict.Finding
	ExperimentFrame   = verdict.Frame
)

// writeExperimentLines are the terminal's lines of the experiment: each
// finding's verdict and its work's CPU per request per variant.
func (r *Run) writeExperimentLines(w io.Writer) {
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
func (r *Run) experimentMarkdown() string {
	e := r.Experiment
	if e == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Experiment\n\nA short confirming run on %s (budget %.0f s, took %.1f s%s): the request varied in ways "+
		"that should not matter and in ways that should.\n\n",
		e.Endpoint, e.BudgetS, e.TookS, experimentClients(e))
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
	if n := busyNote(e); n != "" {
		b.WriteString("\n" + n + "\n")
	}
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
func (r *Run) experimentHTML(h int) string {
	e := r.Experiment
	if e == nil {
		return ""
	}
	esc := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, "<h%d>Experiment</h%d><p>A short confirming run on %s (budget %.0f s, took %.1f s%s): the request varied in "+
		"ways that should not matter and in ways that should.</p>",
		h, h, esc(e.Endpoint), e.BudgetS, e.TookS, esc(experimentClients(e)))
	if e.Skipped != "" {
		fmt.Fprintf(&b, "<p>Not run: %s</p>", esc(e.Skipped))
		return b.String()
	}
	b.WriteString("<table><tr><th>variant</th><th>should " +
		"matter</th><th>request</th><th>requests</th><th>reply</th><th>same reply</th></tr>")
	for _, v := range e.Variants {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td><code>%s</code></td><td>%d</td><td>%s</td><td>%s</td></tr>",
			esc(v.Name), yesNo(v.ShouldMatter), esc(v.Request), v.Requests, esc(variantReply(v)), yesNo(v.SameReply))
	}
	b.WriteString("</table>")
	if n := busyNote(e); n != "" {
		fmt.Fprintf(&b, "<p>%s</p>", esc(n))
	}
	for _, f := range e.Findings {
		fmt.Fprintf(&b, "<p><b>%s</b>: %s → %s (%s). %s%s</p><table><tr><th>CPU per request (ms)</th>", esc(f.Rule), esc(f.ClassBefore),
			esc(f.Class),
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

// busyNote says how many of the variants' seconds were left out for a
// busy machine ("": none).
func busyNote(e *Experiment) string {
	n := 0
	for _, v := range e.Variants {
		n += v.BusySecondsLeftOut
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of the variants' seconds were left out: other processes used more than %.2f cores in them, "+
		"which slows the same work by as much as an input that matters.", n, machine.BusyCores)
}

// noiseNote is the sentence on the seconds' noise ("" when it was not
// measured), with the tolerance when the verdict had one.
func noiseNote(f ExperimentFinding) string {
	if f.SlotNoise == 0 {
		return ""
	}
	note := fmt.Sprintf(" One second's CPU per request of the work differed from its variant's by ±%.0f%% (a standard deviation)",
		100*f.SlotNoise)
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

// experimentClients names the experiment's clients when it ran a closed
// loop ("" otherwise).
func experimentClients(e *Experiment) string {
	switch e.Clients {
	case 0:
		return ""
	case 1:
		return ", 1 client"
	}
	return fmt.Sprintf(", %d clients", e.Clients)
}
