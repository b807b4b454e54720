package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/probehq/probe/analyzers"
)

// ProductionFindings is what probe analyze --from found in a fleet's
// merged profile: the findings of profiles alone (no reply evidence, so
// load-time only for work invariant by nature), the unexplained list, the
// top own functions and the flame graph beside it.
type ProductionFindings struct {
	*ProfileFindings
	Source   string            `json:"source"`
	Service  string            `json:"service"`
	Selector string            `json:"selector"`
	Type     string            `json:"profile_type"`
	Start    string            `json:"start"`
	End      string            `json:"end"`
	Top      []TopFunction     `json:"top_own_functions"`
	Raw      map[string][]byte `json:"-"` // the flame graph and the fetched profile
}

// TopFunction is one of the functions that took most of the profile in
// their own code (flat), with what they and their callees took (cum).
type TopFunction struct {
	Function string  `json:"function"`
	Kind     string  `json:"kind"` // own, std, runtime, third-party (lib/frames)
	Flat     float64 `json:"flat_share"`
	Cum      float64 `json:"cum_share"`
}

// JSON is report.json.
func (d *ProductionFindings) JSON() ([]byte, error) {
	d.Findings = nonNilFindings(d.Findings)
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding report.json: %v", err)
	}
	return append(b, '\n'), nil
}

// Files are the flame graph and the fetched profile.
func (d *ProductionFindings) Files() (map[string][]byte, error) { return d.Raw, nil }

// WriteTable: where the profile came from, the findings, the top functions.
func (d *ProductionFindings) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%s %s, %s, %s to %s\n", d.Source, d.Selector, d.Type, d.Start, d.End)
	d.ProfileFindings.WriteTable(w)
	writeTop(w, d.Top, "")
}

// Markdown is report.md.
func (d *ProductionFindings) Markdown() string {
	var b strings.Builder
	b.WriteString(d.ProfileFindings.Markdown())
	fmt.Fprintf(&b, "\nFrom %s, `%s`, profile type `%s`, %s to %s: the fleet's own traffic; no reply was seen, so only work "+
		"invariant by nature is called load-time.\n",
		d.Source, d.Selector, d.Type, d.Start, d.End)
	if len(d.Top) > 0 {
		b.WriteString("\n## Top own functions\n\n")
		writeTop(&b, d.Top, "- ")
	}
	return b.String()
}

func writeTop(w io.Writer, top []TopFunction, bullet string) {
	if bullet == "" && len(top) > 0 {
		fmt.Fprintln(w, "top own functions (flat, cum):")
		bullet = "  "
	}
	for _, t := range top {
		fmt.Fprintf(w, "%s%5.1f%% %5.1f%%  %s\n", bullet, 100*t.Flat, 100*t.Cum, t.Function)
	}
}

func nonNilFindings(fs []analyzers.Finding) []analyzers.Finding {
	if fs == nil {
		return []analyzers.Finding{}
	}
	return fs
}
