package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes"
)

// ProfileFindings is what `probe analyze` found in profiles taken
// elsewhere: no run, so no latencies and no reply evidence.
type ProfileFindings struct {
	Profiles    []string                `json:"profiles"`
	Findings    []analyzers.Finding     `json:"findings"`
	Unexplained []analyzers.Unexplained `json:"unexplained,omitempty"`
	// Warnings: what was dropped from the profiles as invalid, an
	// analysis that was interrupted.
	Warnings []probes.Warning `json:"warnings,omitempty"`
}

// JSON is the findings as JSON.
func (p *ProfileFindings) JSON() ([]byte, error) {
	p.Findings = nonNil(p.Findings)
	return marshal(p)
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
	labels := labelFindings(p.Findings)
	for i, f := range p.Findings {
		l := labels[i]
		in := strings.Repeat("   ", l.Depth)
		fmt.Fprintf(w, "%s%s. %s%s [%s, %s] %.0f%% CPU, %.0f%% allocations\n%s   %s\n%s   evidence: %s\n%s   %s\n", in, l.Number, f.Rule, l.partOf(f),
			f.Class, f.Severity, 100*f.CPUShare, 100*f.AllocShare, in, f.Suggestion, in, f.Evidence, in, where(f))
	}
	for _, u := range p.Unexplained {
		fmt.Fprintf(w, "unexplained: %.0f%% of the CPU under %s (no rule names it; --rules can)\n", 100*u.CPUShare, u.PathTail(4, " → "))
		if calls := u.CallsInWords(); calls != "" {
			fmt.Fprintf(w, "   calls %s\n", calls)
		}
	}
}

// Markdown is the findings as report.md.
func (p *ProfileFindings) Markdown() string {
	var b strings.Builder
	var labels []findingLabel
	fmt.Fprintf(&b, "# Findings in %s\n\n", strings.Join(p.Profiles, ", "))
	if len(p.Findings) == 0 {
		b.WriteString("No findings: no rule's work reaches its share of these profiles.\n")
	}
	for _, wn := range p.Warnings {
		fmt.Fprintf(&b, "Warning (`%s`): %s\n\n", wn.Kind, wn.Message)
	}
	labels = labelFindings(p.Findings)
	for i, f := range p.Findings {
		l := labels[i]
		in := strings.Repeat("   ", l.Depth) // a part is a list inside its parent's item
		if l.Depth > 0 {
			fmt.Fprintf(&b, "%s- **%s %s**%s", in, l.Number, f.Rule, l.partOf(f))
		} else {
			fmt.Fprintf(&b, "%s. **%s**", l.Number, f.Rule)
		}
		fmt.Fprintf(&b, " (%s, %s): %.0f%% of CPU, %.0f%% of allocations.  \n%s   %s  \n%s   Evidence: %s  \n%s   Frames: `%s`\n",
			f.Class, f.Severity, 100*f.CPUShare, 100*f.AllocShare, in, f.Suggestion, in, f.Evidence, in, strings.Join(f.Frames, "` ← `"))
	}
	return b.String()
}
