package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/result"
)

// ProfileFindings is what `probe analyze` found in profiles taken
// elsewhere: no run, so no latencies and no reply evidence.
type ProfileFindings struct {
	Profiles    []string                `json:"profiles"`
	Findings    []analyzers.Finding     `json:"findings"`
	Unexplained []analyzers.Unexplained `json:"unexplained,omitempty"`
	// CPU is how the CPU profile's time divides: the shares' denominators.
	CPU *analyzers.CPUSplit `json:"cpu_split,omitempty"`
	// Warnings: what was dropped from the profiles as invalid, an
	// analysis that was interrupted.
	Warnings []result.Warning `json:"warnings,omitempty"`
}

// JSON is the findings as JSON.
func (p *ProfileFindings) JSON() ([]byte, error) {
	p.Findings = NonNil(p.Findings)
	return Marshal(p)
}

// Page is report.md.
func (p *ProfileFindings) Page() string { return "report.md" }

// Files: none besides the report.
func (p *ProfileFindings) Files() (map[string][]byte, error) { return map[string][]byte{}, nil }

// WriteTable lists the findings, largest first, and the warnings.
func (p *ProfileFindings) WriteTable(w io.Writer) {
	defer func() {
		for _, wn := range p.Warnings {
			fmt.Fprintf(w, "warning [%s]: %s\n", wn.Kind, wn.Message)
		}
	}()
	if len(p.Findings) == 0 {
		fmt.Fprintln(w, "no findings: no rule's work reaches its share of these profiles")
	}
	if p.CPU != nil && len(p.Findings)+len(p.Unexplained) > 0 {
		fmt.Fprintln(w, p.CPU.Line())
	}
	labels := LabelFindings(p.Findings)
	for i, f := range p.Findings {
		l := labels[i]
		in := l.Indent()
		fmt.Fprintf(w, "%s\n%s   %s\n%s   evidence: %s\n%s   %s\n", l.TableItem(f), in, f.Suggestion, in, f.Evidence, in, Where(f))
	}
	for _, u := range p.Unexplained {
		fmt.Fprintf(w, "unexplained: %.0f%% of the target's CPU under %s (no rule names it; --rules can)\n", 100*u.CPUShare, u.PathTail(4, " → "))
		if calls := u.CallsInWords(); calls != "" {
			fmt.Fprintf(w, "   calls %s\n", calls)
		}
	}
}

// Markdown is the findings as report.md.
func (p *ProfileFindings) Markdown() string {
	var b strings.Builder
	var labels []FindingLabel
	fmt.Fprintf(&b, "# Findings in %s\n\n", strings.Join(p.Profiles, ", "))
	if len(p.Findings) == 0 {
		b.WriteString("No findings: no rule's work reaches its share of these profiles.\n")
	}
	for _, wn := range p.Warnings {
		fmt.Fprintf(&b, "Warning (`%s`): %s\n\n", wn.Kind, wn.Message)
	}
	if p.CPU != nil && len(p.Findings)+len(p.Unexplained) > 0 {
		b.WriteString(p.CPU.Line() + ".\n\n")
	}
	labels = LabelFindings(p.Findings)
	for i, f := range p.Findings {
		l := labels[i]
		b.WriteString(l.markdownHead(f, ""))
		fmt.Fprintf(&b, "%s   Frames: `%s`\n", l.Indent(), strings.Join(f.Frames, "` ← `"))
	}
	return b.String()
}
