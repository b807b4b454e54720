package pipeline

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/probehq/probe/analyzers/compare"
	"github.com/probehq/probe/flamegraphs"
	"github.com/probehq/probe/report/abreport"
	"github.com/probehq/probe/result"
)

// CompareSides is the compare step of probe compare and probe ab: per
// microload the analyzers' statistics on the runs' figures, the findings
// that came or went, the hot path and a differential flame graph. A
// microload measured on one side only is a one-sided warning; failures are
// the runs that did not count.
func CompareSides(beforeName, afterName string, before, after map[string][]*abreport.RunData, failures []abreport.SideFailure) *abreport.AB {
	var names []string
	var oneSided []result.Warning
	for m := range before {
		if len(after[m]) > 0 {
			names = append(names, m)
		} else {
			oneSided = append(oneSided, result.Warning{Kind: "one-sided", Message: fmt.Sprintf("%s was measured before "+
				"only: nothing to compare", m)})
		}
	}
	for m := range after {
		if len(before[m]) == 0 {
			oneSided = append(oneSided, result.Warning{Kind: "one-sided", Message: fmt.Sprintf("%s was measured after "+
				"only: nothing to compare", m)})
		}
	}
	sort.Strings(names)
	sort.Slice(oneSided, func(i, j int) bool { return oneSided[i].Message < oneSided[j].Message })
	var comps []compare.Comparison
	curves := map[string][2][][]abreport.CurvePoint{}
	files := map[string][]byte{}
	for _, m := range names {
		var fb, fa []compare.RunFigures
		var cb, ca [][]abreport.CurvePoint
		for _, d := range before[m] {
			fb, cb = append(fb, d.Figures()), append(cb, d.Curve)
		}
		for _, d := range after[m] {
			fa, ca = append(fa, d.Figures()), append(ca, d.Curve)
		}
		c := compare.Compare(m, abreport.Metrics(), fb, fa)
		comps = append(comps, c)
		curves[m] = [2][][]abreport.CurvePoint{cb, ca}
		diffFlame(files, beforeName, afterName, c)
	}
	return abreport.NewAB(beforeName, afterName, comps, curves, files, failures, oneSided)
}

// diffFlame draws flame-diff-MICROLOAD.html from c's merged CPU profiles,
// when both sides have one.
func diffFlame(files map[string][]byte, beforeName, afterName string, c compare.Comparison) {
	if c.Before == nil || c.After == nil {
		return
	}
	if t, err := flamegraphs.FoldDiff(c.Before, c.After, flamegraphs.FoldOptions{SampleIndex: "cpu"}); err == nil {
		var buf bytes.Buffer
		title := fmt.Sprintf("%s: CPU of %s against %s (red: a larger share after)", c.Microload, afterName, beforeName)
		if flamegraphs.WriteHTML(&buf, t, flamegraphs.Options{Title: title}) == nil {
			files["flame-diff-"+c.Microload+".html"] = buf.Bytes()
		}
	}
}
