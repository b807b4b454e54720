package report

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// Verdicts of a verification (--verify).
const (
	Confirmed    = "confirmed"    // the replies were the same and the saving's interval excludes zero
	Refuted      = "refuted"      // the replies changed, or nothing was saved
	Inconclusive = "inconclusive" // measured, but no verdict (Why says why)
	NotBuilt     = "not-built"    // no variant: not rewritable, or it did not build (Why says why)
)

// Verification is one finding's claim put to the test (--verify): the
// variant of the source with the work done once, measured against the
// original on the same microload. Savings are fractions of the target
// process's whole CPU per request.
type Verification struct {
	Finding string `json:"finding"` // rule@function
	Class   string `json:"class"`
	// Claimed is the class the finding had before the source showed its
	// call's input made per request ("load-time", then class "cacheable").
	Claimed         string    `json:"claimed_class,omitempty"`
	Verdict         string    `json:"verdict"`
	PredictedSaving float64   `json:"predicted_saving"`
	MeasuredSaving  *float64  `json:"measured_saving"` // null: not measured
	Interval        *Interval `json:"interval"`        // of measured_saving; null: not measured
	RepliesSame     *bool     `json:"replies_same"`    // null: not compared
	Rounds          int       `json:"rounds"`          // measured rounds, both sides
	Why             string    `json:"why,omitempty"`
	Patch           string    `json:"patch,omitempty"` // verify/N.diff, beside the report
	Form            string    `json:"form,omitempty"`  // how the variant does the work once
	Call            string    `json:"call,omitempty"`  // the call rewritten, as the source writes it
	Site            string    `json:"site,omitempty"`  // file:line of the call
}

// AttachFile adds a file the report folder holds beside report.json (a
// --verify patch, verify/N.diff), written with the report and listed in its
// manifest.
func (r *Run) AttachFile(name string, b []byte) {
	if r.files == nil {
		r.files = map[string][]byte{}
	}
	r.files[name] = b
}

// Unverified says whether a verification did not confirm its finding
// (--fail-on unverified).
func (v Verification) Unverified() bool { return v.Verdict != Confirmed }

// class is the class verified, and the one claimed before when other.
func (v Verification) class() string {
	if v.Claimed == "" || v.Claimed == v.Class {
		return v.Class
	}
	return v.Class + " (claimed " + v.Claimed + ")"
}

func (v Verification) measured() string {
	if v.MeasuredSaving == nil {
		return "–"
	}
	s := fmt.Sprintf("%.0f%%", 100**v.MeasuredSaving)
	if v.Interval != nil {
		s += fmt.Sprintf(" [%.0f%%, %.0f%%]", 100*v.Interval[0], 100*v.Interval[1])
	}
	return s
}

func (v Verification) replies() string {
	if v.RepliesSame == nil {
		return "–"
	}
	return yesNo(*v.RepliesSame)
}

func verificationTable(vs []Verification) *Table {
	t := &Table{Columns: []Column{{Title: "finding"}, {Title: "class"}, {Title: "verdict"}, {Title: "predicted", Right: true},
		{Title: "measured [interval]", Right: true}, {Title: "replies same"}, {Title: "patch"}, {Title: "why"}}}
	for _, v := range vs {
		t.AddRow(v.Finding, v.class(), v.Verdict, fmt.Sprintf("%.0f%%", 100*v.PredictedSaving), v.measured(), v.replies(), v.Patch, v.Why)
	}
	return t
}

// writeVerificationLines are the terminal's lines of --verify.
func (r *Run) writeVerificationLines(w io.Writer) {
	for _, v := range r.Verification {
		fmt.Fprintf(w, "  verify: %s [%s] %s: predicted %.0f%%, measured %s%s\n", v.Finding, v.class(), v.Verdict,
			100*v.PredictedSaving, v.measured(), whyTail(v.Why))
	}
}

func whyTail(why string) string {
	if why == "" {
		return ""
	}
	return " — " + why
}

const verificationIntro = "Each load-time or cacheable finding's work was done once in a variant of the source (the patch), " +
	"and the variant measured against the original in alternating rounds on the same microload: CPU per request of the " +
	"target's process, and the replies to the same requests. Savings are shares of the original's CPU per request."

// verificationMarkdown is report.md's section of --verify ("" without).
func (r *Run) verificationMarkdown() string {
	if len(r.Verification) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Verification\n\n" + verificationIntro + "\n\n")
	b.WriteString(verificationTable(r.Verification).Markdown())
	return b.String()
}

// verificationHTML is report.html's section of --verify.
func (r *Run) verificationHTML(h int) string {
	if len(r.Verification) == 0 {
		return ""
	}
	return fmt.Sprintf("<h%d>Verification</h%d><p>%s</p>", h, h, html.EscapeString(verificationIntro)) +
		verificationTable(r.Verification).HTML()
}
