package abreport

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/probehq/probe/analyzers/compare"
	"github.com/probehq/probe/report"
)

// JSON is the before/after report.json.
func (ab *AB) JSON() ([]byte, error) { return report.Marshal(ab) }

// Page is report.html.
func (ab *AB) Page() string { return "report.html" }

// Files are report.html and the differential flame graphs.
func (ab *AB) Files() (map[string][]byte, error) {
	return report.PageFiles(ab.HTML(), ab.files), nil
}

// fmtValue prints a metric's value with its unit.
func fmtValue(metric string, v float64) string {
	switch {
	case v == 0:
		return "—"
	case strings.HasSuffix(metric, "_ms"):
		return report.FmtMS(v)
	case metric == "alloc_bytes_per_req":
		return report.FmtBytes(int64(v))
	case metric == "rps":
		return fmt.Sprintf("%.0f/s", v)
	default:
		if v >= 100 {
			return fmt.Sprintf("%.0f", v)
		}
		return fmt.Sprintf("%.3g", v)
	}
}

// delta says a comparison the benchstat way: "~" or the signed change,
// with the ratio's interval.
func (c ABComparison) delta() string {
	if !c.Significant {
		if c.PValue == nil {
			return fmt.Sprintf("×%.2f (not tested)", c.Ratio)
		}
		return "~"
	}
	return fmt.Sprintf("%+.1f%% ×%.2f [%s, %s]", 100*(c.Ratio-1), c.Ratio, fmtBound(c.CI95[0]), fmtBound(c.CI95[1]))
}

func fmtBound(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "∞"
	}
	return fmt.Sprintf("%.2f", v)
}

func (c ABComparison) pString() string {
	if c.PValue == nil {
		return "—"
	}
	return fmt.Sprintf("p=%.3f n=%d+%d", *c.PValue, c.N[0], c.N[1])
}

// comparisonTable has one row per microload and metric, in the manner of
// benchstat; classes are the rows' verdicts, for the HTML page.
func (ab *AB) comparisonTable() (t *report.Table, classes []string) {
	t = &report.Table{Columns: []report.Column{{Title: "microload"}, {Title: "metric"}, {Title: "before", Right: true}, {Title: "after", Right: true},
		{Title: "change"}, {Title: "p"}, {Title: ""}}}
	for _, c := range ab.Comparisons {
		t.AddRow(c.Microload, c.Metric, fmtValue(c.Metric, c.Before), fmtValue(c.Metric, c.After), c.delta(), c.pString(), verdictMark(c))
		class := "noise"
		if c.Verdict == "better" || c.Verdict == "worse" {
			class = c.Verdict
		}
		classes = append(classes, class)
	}
	return t, classes
}

// WriteTable prints the comparisons in the manner of benchstat.
func (ab *AB) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "before: %s\nafter:  %s\n%d runs a side%s\n", ab.Before, ab.After, ab.Runs, orderNote(ab.Order))
	t, _ := ab.comparisonTable()
	t.Text(w)
	if len(ab.Geomean) > 0 {
		fmt.Fprintf(w, "geomean of after/before: %s\n", ab.geomeanLine())
	}
	for _, f := range ab.Fixed {
		fmt.Fprintf(w, "  fixed: %s on %s\n", f.Rule, f.Microload)
	}
	for _, f := range ab.Regressed {
		fmt.Fprintf(w, "  regressed: %s on %s\n", f.Rule, f.Microload)
	}
	for _, f := range ab.Failures {
		fmt.Fprintf(w, "  failure: %s, run %d %s: %s\n", f.Side, f.Run, f.Microload, f.Reason)
	}
	report.ListWarnings(w, ab.Warnings)
	report.ListThresholds(w, ab.Thresholds)
}

func verdictMark(c ABComparison) string {
	switch c.Verdict {
	case "better":
		return "better"
	case "worse":
		return "WORSE"
	}
	return ""
}

func orderNote(o string) string {
	if o == "" {
		return ""
	}
	return ", " + o
}

func (ab *AB) geomeanLine() string {
	names := make([]string, 0, len(ab.Geomean))
	for _, m := range Metrics() {
		if _, ok := ab.Geomean[m.Name]; ok {
			names = append(names, m.Name)
		}
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s ×%.2f", n, ab.Geomean[n])
	}
	return strings.Join(parts, ", ")
}

// Markdown is report.md.
func (ab *AB) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Before/after\n\n- before: `%s`\n- after: `%s`\n- %d runs a side%s\n\n", ab.Before, ab.After, ab.Runs,
		orderNote(ab.Order))
	b.WriteString("Medians with 95% confidence intervals; a change is claimed when a Mann-Whitney U test gives p ≤ 0.05, else " +
		"`~`. The ratio is after/before: above 1 is better for rps, below 1 for latencies and costs; its interval divides the " +
		"after interval by the before one.\n\n")
	t, _ := ab.comparisonTable()
	b.WriteString(t.Markdown())
	if len(ab.Geomean) > 0 {
		fmt.Fprintf(&b, "\nGeomean of after/before over the microloads: %s.\n", ab.geomeanLine())
	}
	b.WriteString("\n## Findings\n\n")
	if len(ab.Fixed)+len(ab.Regressed) == 0 {
		b.WriteString("No finding appeared or went away.\n")
	}
	for _, f := range ab.Fixed {
		fmt.Fprintf(&b, "- **fixed** `%s` on %s (%s)\n", f.Rule, f.Microload, f.Endpoint)
	}
	for _, f := range ab.Regressed {
		fmt.Fprintf(&b, "- **regressed** `%s` on %s (%s): %s\n", f.Rule, f.Microload, f.Endpoint, f.Evidence)
	}
	if len(ab.HotPaths) > 0 {
		b.WriteString("\n## Hot path\n\nCumulative share of CPU samples, before → after (flat share in brackets).\n")
		for _, h := range ab.HotPaths {
			fmt.Fprintf(&b, "\n### %s\n\n", h.Microload)
			for _, part := range []struct {
				title string
				ds    []compare.FuncDelta
			}{{"Larger share after", h.Gainers}, {"Smaller share after", h.Losers}} {
				if len(part.ds) == 0 {
					continue
				}
				t := &report.Table{Columns: []report.Column{{Title: "function"}, {Title: "cum before", Right: true}, {Title: "cum after", Right: true},
					{Title: "flat before", Right: true}, {Title: "flat after", Right: true}}}
				for _, d := range part.ds {
					t.AddRow("`"+d.Function+"`", fmt.Sprintf("%.1f%%", 100*d.CumBefore), fmt.Sprintf("%.1f%%", 100*d.CumAfter),
						fmt.Sprintf("%.1f%%", 100*d.FlatBefore), fmt.Sprintf("%.1f%%", 100*d.FlatAfter))
				}
				fmt.Fprintf(&b, "%s:\n\n%s\n", part.title, t.Markdown())
			}
		}
	}
	if len(ab.FileList) > 0 {
		fmt.Fprintf(&b, "\nDifferential flame graphs: %s. `report.html` has these tables and the latency percentile plots.\n",
			strings.Join(ab.FileList, ", "))
	}
	if len(ab.Failures) > 0 {
		b.WriteString("\n## Failures\n\n")
		for _, f := range ab.Failures {
			fmt.Fprintf(&b, "- %s, run %d %s: %s\n", f.Side, f.Run, f.Microload, f.Reason)
		}
	}
	report.WriteWarnings(&b, ab.Warnings)
	report.WriteThresholds(&b, ab.Thresholds)
	return b.String()
}

// HTML is report.html: one self-contained page with the tables and, per
// microload, the latency percentile distributions of every run (before in
// blue, after in orange) on log-scaled axes, as SVG.
func (ab *AB) HTML() string {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>probe before/after</title><style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left}
td.num{text-align:right}
.better{color:#176c2e;font-weight:600}.worse{color:#b00020;font-weight:600}.noise td{color:#888}
code{background:#f4f4f4;padding:0 3px}svg{background:#fff;border:1px solid #ddd}
</style></head><body>`)
	fmt.Fprintf(&b, "<h1>Before/after</h1><p>before: <code>%s</code><br>after: <code>%s</code><br>%d runs a side%s</p>",
		esc(ab.Before), esc(ab.After), ab.Runs, esc(orderNote(ab.Order)))
	b.WriteString("<p>Medians with 95% confidence intervals; a change is claimed when a Mann-Whitney U test gives p ≤ 0.05, " +
		"else ~. Ratio = after/before.</p>")
	t, classes := ab.comparisonTable()
	b.WriteString(t.HTML(classes...))
	if len(ab.Geomean) > 0 {
		fmt.Fprintf(&b, "<p>Geomean of after/before: %s</p>", esc(ab.geomeanLine()))
	}
	if len(ab.Fixed)+len(ab.Regressed) > 0 {
		b.WriteString("<h2>Findings</h2><ul>")
		for _, f := range ab.Fixed {
			fmt.Fprintf(&b, `<li class="better">fixed <code>%s</code> on %s</li>`, esc(f.Rule), esc(f.Microload))
		}
		for _, f := range ab.Regressed {
			fmt.Fprintf(&b, `<li class="worse">regressed <code>%s</code> on %s</li>`, esc(f.Rule), esc(f.Microload))
		}
		b.WriteString("</ul>")
	}
	b.WriteString("<h2>Latency by percentile</h2>")
	for _, m := range ab.Microloads {
		fmt.Fprintf(&b, "<h3>%s</h3>%s", esc(m), percentilePlot(ab.curves[m]))
		if f := "flame-diff-" + m + ".html"; contains(ab.FileList, f) {
			fmt.Fprintf(&b, `<p><a href="%s">differential flame graph</a></p>`, esc(f))
		}
	}
	for _, f := range ab.Failures {
		fmt.Fprintf(&b, `<p class="worse">%s, run %d %s: %s</p>`, esc(f.Side), f.Run, esc(f.Microload), esc(f.Reason))
	}
	for _, w := range ab.Warnings {
		fmt.Fprintf(&b, "<p><b>%s</b>: %s</p>", esc(w.Kind), esc(w.Message))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// percentilePlot draws HdrHistogram's classic chart: x is the percentile
// on the 1/(1-p) scale (50%, 90%, 99%, 99.9% equally spaced), y the
// latency on a log scale; one line per run.
func percentilePlot(sides [2][][]CurvePoint) string {
	const w, h, left, bottom, top, right = 720.0, 320.0, 60.0, 40.0, 12.0, 110.0
	maxX, minY, maxY := 1.0, math.Inf(1), math.Inf(-1)
	xOf := func(p float64) float64 { return math.Log10(1 / (1 - p/100)) }
	for _, runs := range sides {
		for _, c := range runs {
			for _, pt := range c {
				if pt.Percentile > 99.99 || pt.Ms <= 0 {
					continue
				}
				maxX = max(maxX, xOf(pt.Percentile))
				minY, maxY = min(minY, pt.Ms), max(maxY, pt.Ms)
			}
		}
	}
	if math.IsInf(minY, 0) {
		return "<p>no latency distribution in the report folders</p>"
	}
	lo, hi := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
	if hi == lo {
		hi++
	}
	maxX = math.Min(math.Ceil(maxX), 4)
	px := func(x float64) float64 { return left + (w-left-right)*x/maxX }
	py := func(ms float64) float64 { return top + (h-top-bottom)*(1-(math.Log10(ms)-lo)/(hi-lo)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-size="11">`, w, h, w, h)
	for k := 0.0; k <= maxX; k++ {
		label := []string{"0%", "90%", "99%", "99.9%", "99.99%"}[int(k)]
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" `+
			`text-anchor="middle">%s</text>`, px(k), px(k), top, h-bottom, px(k), h-bottom+15, label)
	}
	for e := lo; e <= hi; e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left, w-right, py(v), py(v), left-5, py(v)+4, html.EscapeString(report.FmtMS(v)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">percentile</text>`, (left+w-right)/2, h-5)
	colours := [2]string{"#1f6fc5", "#e8730c"}
	for s, runs := range sides {
		for _, c := range runs {
			var pts []string
			sort.Slice(c, func(i, j int) bool { return c[i].Percentile < c[j].Percentile })
			for _, pt := range c {
				if pt.Percentile > 99.99 || pt.Ms <= 0 || xOf(pt.Percentile) > maxX {
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xOf(pt.Percentile)), py(pt.Ms)))
			}
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-opacity="0.7" stroke-width="1.5" points="%s"/>`, colours[s],
					strings.Join(pts, " "))
			}
		}
	}
	for s, name := range []string{"before", "after"} {
		y := top + 10 + 18*float64(s)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/><text x="%.1f" y="%.1f">%s</text>`,
			w-right+10, w-right+35, y, y, colours[s], w-right+40, y+4, name)
	}
	b.WriteString("</svg>")
	return b.String()
}
