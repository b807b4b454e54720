package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/probehq/probe/analyzers"
)

// ProfileFindings is what `probe analyze` found in profiles taken
// elsewhere: no run, so no latencies and no reply evidence.
type ProfileFindings struct {
	Profiles    []string                `json:"profiles"`
	Findings    []analyzers.Finding     `json:"findings"`
	Unexplained []analyzers.Unexplained `json:"unexplained,omitempty"`
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

// WriteTable lists the findings, largest first.
func (p *ProfileFindings) WriteTable(w io.Writer) {
	if len(p.Findings) == 0 {
		fmt.Fprintln(w, "no findings: no rule's work reaches its share of these profiles")
	}
	for i, f := range p.Findings {
		fmt.Fprintf(w, "%d. %s [%s, %s] %.0f%% CPU, %.0f%% allocations\n   %s\n   evidence: %s\n   %s\n", i+1, f.Rule, f.Class, f.Severity,
			100*f.CPUShare, 100*f.AllocShare, f.Suggestion, f.Evidence, where(f))
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
	fmt.Fprintf(&b, "# Findings in %s\n\n", strings.Join(p.Profiles, ", "))
	if len(p.Findings) == 0 {
		b.WriteString("No findings: no rule's work reaches its share of these profiles.\n")
	}
	for i, f := range p.Findings {
		fmt.Fprintf(&b, "%d. **%s** (%s, %s): %.0f%% of CPU, %.0f%% of allocations.  \n   %s  \n   Evidence: %s  \n   Frames: `%s`\n",
			i+1, f.Rule, f.Class, f.Severity, 100*f.CPUShare, 100*f.AllocShare, f.Suggestion, f.Evidence, strings.Join(f.Frames, "` ← `"))
	}
	return b.String()
}
