package report

import (
	"strings"
	"testing"

	"github.com/probehq/probe/analyzers"
)

// Parts are numbered under their parent, at any depth, and the HTML lists
// nest and close.
func TestPartsAreNumberedUnderTheirParent(t *testing.T) {
	fs := []analyzers.Finding{
		{Rule: "repeated-reply", Endpoint: "GET /a"},
		{Rule: "repeated-xml-encode", PartOf: "repeated-reply", Endpoint: "GET /a"},
		{Rule: "repeated-sort", PartOf: "repeated-xml-encode", Endpoint: "GET /a"},
		{Rule: "repeated-gzip", PartOf: "repeated-reply", Endpoint: "GET /a"},
		{Rule: "gc-pressure", Endpoint: "GET /a"},
		{Rule: "repeated-gzip", PartOf: "repeated-reply", Endpoint: "GET /b"}, // its parent is another run's
	}
	var got []string
	for _, l := range LabelFindings(fs) {
		got = append(got, l.Number)
	}
	if strings.Join(got, " ") != "1 1.1 1.1.1 1.2 2 3" {
		t.Errorf("numbers %v", got)
	}
	r := goldenRun()
	r.Findings = fs
	var b strings.Builder
	r.body(&b, "", 2)
	html := b.String()
	if o, c := strings.Count(html, "<li>"), strings.Count(html, "</li>"); o != c {
		t.Errorf("%d <li>, %d </li>", o, c)
	}
	if o, c := strings.Count(html, "<ol"), strings.Count(html, "</ol>"); o != c {
		t.Errorf("%d <ol>, %d </ol>", o, c)
	}
	// report.md: a part is a list item inside its parent's, one level in.
	md := r.Markdown()
	for _, want := range []string{"\n1. **repeated-reply**", "\n   - **1.1 repeated-xml-encode** (part of 1, repeated-reply)",
		"\n      - **1.1.1 repeated-sort** (part of 1.1, repeated-xml-encode)", "\n2. **gc-pressure**"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}
