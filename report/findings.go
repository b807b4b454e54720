package report

import (
	"fmt"

	"github.com/probehq/probe/analyzers"
)

// findingLabel is how a report numbers a finding: top-level findings
// 1, 2, …; a finding that is a part of another (part_of) is numbered
// under it, 1.1, 1.2, … and indented one level per parent.
type findingLabel struct {
	Number string
	Depth  int
	Parent string // the parent's number, "" for a top-level finding
}

// labelFindings numbers fs as the analyzers list them: each part right
// after its parent (or after the parent's earlier parts). A part whose
// parent is not listed before it is numbered as a top-level finding.
func labelFindings(fs []analyzers.Finding) []findingLabel {
	out := make([]findingLabel, len(fs))
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
			out[i] = findingLabel{Number: fmt.Sprint(top)}
			continue
		}
		children[parent]++
		p := out[parent]
		out[i] = findingLabel{Number: fmt.Sprintf("%s.%d", p.Number, children[parent]), Depth: p.Depth + 1, Parent: p.Number}
	}
	return out
}

// partOf is what a report says after a part's rule: which finding holds it.
func (l findingLabel) partOf(f analyzers.Finding) string {
	if l.Parent == "" {
		return ""
	}
	return fmt.Sprintf(" (part of %s, %s)", l.Parent, f.PartOf)
}
