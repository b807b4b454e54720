package report

import (
	"fmt"
	"strings"

	"github.com/probehq/probe/analyzers"
)

// FindingLabel is how a report numbers a finding: top-level findings
// 1, 2, …; a finding that is a part of another (part_of) is numbered
// under it, 1.1, 1.2, … and indented one level per parent.
type FindingLabel struct {
	Number string
	Depth  int
	Parent string // the parent's number, "" for a top-level finding
}

// LabelFindings numbers fs as the analyzers list them: each part right
// after its parent (or after the parent's earlier parts). A part whose
// parent is not listed before it is numbered as a top-level finding.
func LabelFindings(fs []analyzers.Finding) []FindingLabel {
	out := make([]FindingLabel, len(fs))
	children := map[int]int{} // index → parts numbered so far
	top := 0
	for i, f := range fs {
		parent := -1
		if f.PartOf != "" {
			for j := i - 1; j >= 0; j-- {
				if fs[j].Rule == f.PartOf && fs[j].Endpoint == f.Endpoint {
					parent = j
					break
				}
			}
		}
		if parent < 0 {
			top++
			out[i] = FindingLabel{Number: fmt.Sprint(top)}
			continue
		}
		children[parent]++
		p := out[parent]
		out[i] = FindingLabel{Number: fmt.Sprintf("%s.%d", p.Number, children[parent]), Depth: p.Depth + 1, Parent: p.Number}
	}
	return out
}

// PartOf is what a report says after a part's rule: which finding holds it.
func (l FindingLabel) PartOf(f analyzers.Finding) string {
	if l.Parent == "" {
		return ""
	}
	return fmt.Sprintf(" (part of %s, %s)", l.Parent, f.PartOf)
}

// Indent is what goes before each line of a finding in a report: three
// spaces a level, a part's list inside its parent's item.
func (l FindingLabel) Indent() string { return strings.Repeat("   ", l.Depth) }

// MarkdownItem begins the finding's item in report.md: "1. **rule**", or a
// part's "   - **1.1 rule** (part of 1, parent)" in its parent's item.
func (l FindingLabel) MarkdownItem(f analyzers.Finding) string {
	if l.Depth > 0 {
		return fmt.Sprintf("%s- **%s %s**%s", l.Indent(), l.Number, f.Rule, l.PartOf(f))
	}
	return fmt.Sprintf("%s. **%s**", l.Number, f.Rule)
}

// markdownHead is the finding's item in report.md up to its evidence line:
// its beginning, class and severity, where (on: " on ENDPOINT", or none),
// its shares, the suggestion and the evidence.
func (l FindingLabel) markdownHead(f analyzers.Finding, on string) string {
	in := l.Indent()
	return l.MarkdownItem(f) + fmt.Sprintf(" (%s, %s)%s: %.0f%% of the target's CPU (%.0f%% of the CPU serving requests), %.0f%% of "+
		"its allocations.  \n%s   %s  \n%s   Evidence: %s  \n",
		f.Class, f.Severity, on, 100*f.CPUShare, 100*f.CPUShareOfRequests, 100*f.AllocShare, in, f.Suggestion, in, f.Evidence)
}

// TableItem begins the finding's item in a terminal table: its number,
// rule, class and severity, and its shares of the CPU and allocations.
func (l FindingLabel) TableItem(f analyzers.Finding) string {
	return fmt.Sprintf("%s%s. %s%s [%s, %s] %.0f%% of the target's CPU (%.0f%% of the CPU serving requests), %.0f%% of its "+
		"allocations", l.Indent(), l.Number, f.Rule, l.PartOf(f), f.Class, f.Severity, 100*f.CPUShare, 100*f.CPUShareOfRequests,
		100*f.AllocShare)
}
