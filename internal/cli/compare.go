package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/flamegraphs"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// compareCommand is `probe compare BEFORE_DIR AFTER_DIR`: the compare step
// of probe ab on two report folders written earlier.
func compareCommand(fs *flag.FlagSet) runner {
	var output outputFlags
	output.register(fs, "compare")
	output.registerGates(fs, "regressed, worse, p99_ms:ratio>1.1")
	return func(ctx context.Context, s streams, dirs []string) error {
		gates, err := parseThresholds(output.failOn, "ab")
		if err != nil {
			return err
		}
		if len(dirs) != 2 {
			return usageError{"usage: probe compare BEFORE_DIR AFTER_DIR (two report folders of probe <microload> or probe all)"}
		}
		sides := [2]map[string][]*report.RunData{{}, {}}
		for i, d := range dirs {
			runs, err := report.LoadRuns(d)
			if err != nil {
				return err
			}
			for m, r := range runs {
				sides[i][m] = append(sides[i][m], r)
			}
		}
		for _, d := range dirs {
			if rel, err := filepath.Rel(output.out, d); output.out != "" && err == nil && !strings.HasPrefix(rel, "..") {
				return usageError{fmt.Sprintf("--out %s holds %s, a folder compared: choose another", output.out, d)}
			}
		}
		dir, err := output.claim()
		if err != nil {
			return err
		}
		ab := compareSides(dirs[0], dirs[1], sides[0], sides[1], nil)
		if len(ab.Microloads) == 0 {
			return fmt.Errorf("the two folders have no microload in common")
		}
		var broken []string
		ab.Thresholds, broken = judgeAB(gates, ab)
		if err := writeAndShow(ab, dir, output.json, s); err != nil {
			return err
		}
		if len(broken) > 0 {
			return thresholdsBroken{broken}
		}
		return nil
	}
}

// compareSides is the compare step: per microload the analyzers' statistics
// on the runs' figures, the findings that came or went, the hot path and
// a differential flame graph.
func compareSides(beforeName, afterName string, before, after map[string][]*report.RunData, failures []report.SideFailure) *report.AB {
	var names []string
	var oneSided []probes.Warning
	for m := range before {
		if len(after[m]) > 0 {
			names = append(names, m)
		} else {
			oneSided = append(oneSided, probes.Warning{Kind: "one-sided", Message: fmt.Sprintf("%s was measured before only: nothing to compare", m)})
		}
	}
	for m := range after {
		if len(before[m]) == 0 {
			oneSided = append(oneSided, probes.Warning{Kind: "one-sided", Message: fmt.Sprintf("%s was measured after only: nothing to compare", m)})
		}
	}
	sort.Strings(names)
	sort.Slice(oneSided, func(i, j int) bool { return oneSided[i].Message < oneSided[j].Message })
	var comps []analyzers.Comparison
	curves := map[string][2][][]report.CurvePoint{}
	files := map[string][]byte{}
	for _, m := range names {
		var fb, fa []analyzers.RunFigures
		var cb, ca [][]report.CurvePoint
		for _, d := range before[m] {
			fb, cb = append(fb, d.Figures()), append(cb, d.Curve)
		}
		for _, d := range after[m] {
			fa, ca = append(fa, d.Figures()), append(ca, d.Curve)
		}
		c := analyzers.Compare(m, report.Metrics(), fb, fa)
		comps = append(comps, c)
		curves[m] = [2][][]report.CurvePoint{cb, ca}
		if c.Before != nil && c.After != nil {
			if t, err := flamegraphs.FoldDiff(c.Before, c.After, flamegraphs.FoldOptions{SampleIndex: "cpu"}); err == nil {
				var buf bytes.Buffer
				title := fmt.Sprintf("%s: CPU of %s against %s (red: a larger share after)", m, afterName, beforeName)
				if flamegraphs.WriteHTML(&buf, t, flamegraphs.Options{Title: title}) == nil {
					files["flame-diff-"+m+".html"] = buf.Bytes()
				}
			}
		}
	}
	return report.NewAB(beforeName, afterName, comps, curves, files, failures, oneSided)
}
