package report

import (
	"fmt"
	"html"
	"math"
	"net/url"
	"strings"

	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/textline"
)

// HTML is the run's report.html: the table, the run second by second,
// the latency percentile curve, the findings with links into the flame
// graph, the unexplained CPU and the warnings. Self-contained: inline SVG
// and CSS, no script.
func (r *Run) HTML() string {
	var b strings.Builder
	title := r.Microload + " against " + r.Target
	b.WriteString(PageHead("probe " + title))
	fmt.Fprintf(&b, "<h1>%s</h1>", html.EscapeString(title))
	r.body(&b, "", 2)
	b.WriteString("</body></html>\n")
	return b.String()
}

// body is the run's page below its title; flameDir is the run's folder
// relative to the page (a suite's page links into each run's folder), h
// the level of its headings.
func (r *Run) body(b *strings.Builder, flameDir string, h int) {
	esc := html.EscapeString
	fmt.Fprintf(b, "<p>%s loop, %s, %.1f s measured. %d requests, %d errors, %.0f ok a second.</p>",
		esc(r.Mode), esc(r.load()), r.DurationS, r.Latency.Requests, r.Latency.Errors, r.Latency.RPS)
	b.WriteString(r.OperationsTable().HTML())
	if r.Ended != "" {
		fmt.Fprintf(b, "<p><b>Ended early</b>: %s</p>", esc(r.Ended))
	}
	b.WriteString(r.secondsPlots())
	b.WriteString(LatencyCurve("latency by percentile (ms) — "+r.Microload, r.latency))
	if len(r.Errors) > 0 {
		fmt.Fprintf(b, "<h%d>Errors</h%d><ul>", h, h)
		for _, reason := range result.ByCount(r.Errors) {
			fmt.Fprintf(b, "<li>%d × %s</li>", r.Errors[reason], esc(textline.Of(reason, textline.Max)))
		}
		b.WriteString("</ul>")
	}
	if r.CPU != nil && len(r.Findings)+len(r.Unexplained) > 0 {
		fmt.Fprintf(b, "<p>%s.</p>", esc(r.CPU.Line()))
	}
	if len(r.Findings) > 0 {
		fmt.Fprintf(b, "<h%d>Findings</h%d><ol>", h, h)
		labels := LabelFindings(r.Findings)
		prev := -1 // the depth of the item left open
		for i, f := range r.Findings {
			l := labels[i]
			// A part is an item of a list inside its parent's item.
			if prev >= 0 && l.Depth > prev {
				b.WriteString(`<ol class="parts">`)
			} else if prev >= 0 {
				b.WriteString("</li>" + strings.Repeat("</ol></li>", prev-l.Depth))
			}
			prev = l.Depth
			fmt.Fprintf(b, "<li><b>%s</b>%s (%s, %s) on %s: %.0f%% of the target's CPU (%.0f%% of the CPU serving requests), "+
				"%.0f%% of its allocations. %s<br>%s<br>Fix: %s",
				esc(f.Rule), esc(l.PartOf(f)), esc(f.Class), esc(f.Severity), esc(f.Endpoint), 100*f.CPUShare, 100*f.CPUShareOfRequests,
				100*f.AllocShare,
				shareBar(f.CPUShare), esc(f.Evidence), esc(f.Suggestion))
			if link := r.flameLink(flameDir, focusFrame(f)); link != "" {
				fmt.Fprintf(b, `<br><a class="flame" href="%s">%s in the flame graph</a>`, esc(link), esc(focusFrame(f)))
			}
			fmt.Fprintf(b, "<br><code>%s</code>", esc(Where(f)))
		}
		b.WriteString("</li>" + strings.Repeat("</ol></li>", max(prev, 0)) + "</ol>")
	}
	if len(r.Unexplained) > 0 {
		fmt.Fprintf(b, "<h%d>Unexplained</h%d><p>Own code that took CPU no rule explains (a rule of your own, "+
			"<code>--rules</code>, can name it):</p><ul>", h, h)
		for _, u := range r.Unexplained {
			fmt.Fprintf(b, "<li>%.0f%% of the target's CPU %s <code>%s</code>", 100*u.CPUShare, shareBar(u.CPUShare), esc(u.PathTail(4, " → ")))
			if calls := u.CallsInWords(); calls != "" {
				fmt.Fprintf(b, "<br>calls %s", esc(calls))
			}
			if link := r.flameLink(flameDir, u.Function); link != "" {
				fmt.Fprintf(b, ` <a class="flame" href="%s">flame graph</a>`, esc(link))
			}
			b.WriteString("</li>")
		}
		b.WriteString("</ul>")
	}
	b.WriteString(r.experimentHTML(h))
	b.WriteString(r.verificationHTML(h))
	if len(r.Crashes) > 0 {
		fmt.Fprintf(b, "<h%d>Crashes</h%d><ul>", h, h)
		for _, c := range r.Crashes {
			fmt.Fprintf(b, "<li><b>%s</b> during %s (%s)<pre>%s</pre></li>", esc(c.Class), esc(c.Endpoint), esc(c.Input), esc(c.Evidence))
		}
		b.WriteString("</ul>")
	}
	WriteWarningsHTML(b, r.Warnings, h)
	WriteThresholdsHTML(b, r.Thresholds, h)
	if len(r.ProfileFiles) > 0 {
		b.WriteString("<p>Files beside this report: ")
		for i, name := range r.ProfileFiles {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, `<a href="%s">%s</a>`, esc(flameDir+name), esc(name))
		}
		b.WriteString("</p>")
	}
}

// focusFrame is the frame a finding's link opens the flame graph on: the
// target's own frame, else the innermost frame the finding names.
func focusFrame(f analyzers.Finding) string {
	if f.OwnFrame != "" {
		return f.OwnFrame
	}
	if len(f.Frames) > 0 {
		return f.Frames[0]
	}
	return ""
}

// flameLink opens flame.html (when the run was profiled) focused on frame.
func (r *Run) flameLink(dir, frame string) string {
	if _, ok := r.files["flame.html"]; !ok || frame == "" {
		return ""
	}
	return dir + "flame.html#focus=" + url.PathEscape(frame)
}

// secondsPlots draws requests and errors, then p50 and p99, a second at a
// time: from the run's per-second series (every measured request), else
// from --during-writes' timeline (a report.json written before the series).
func (r *Run) secondsPlots() string {
	var reqs, errs, p50, p99 [][2]float64
	switch {
	case len(r.PerSecond) > 0:
		for _, s := range r.PerSecond {
			reqs = append(reqs, [2]float64{s.T, float64(s.Requests)})
			errs = append(errs, [2]float64{s.T, float64(s.Errors)})
			if s.Requests > 0 { // a second without replies has no latency, not a zero one
				p50 = append(p50, [2]float64{s.T, s.P50})
				p99 = append(p99, [2]float64{s.T, s.P99})
			}
		}
	case r.Writes != nil && len(r.Writes.Timeline) > 0:
		for _, s := range r.Writes.Timeline {
			x := float64(s.Second)
			reqs = append(reqs, [2]float64{x, float64(s.Requests)})
			errs = append(errs, [2]float64{x, float64(s.Errors)})
			p50 = append(p50, [2]float64{x, s.P50})
			p99 = append(p99, [2]float64{x, s.P99})
		}
	default:
		return "<p class=\"note\">No per-second timeline: this run measured no second.</p>"
	}
	return `<div class="plots">` +
		LinePlot("requests and errors a second", "second", []Series{
			{Name: "requests", Color: "#1f6fc5", Points: reqs}, {Name: "errors", Color: "#c33", Points: errs}}, false, 0, 0) +
		LinePlot("p50 and p99 a second (ms, log)", "second", []Series{
			{Name: "p50", Color: "#2a9d5c", Points: p50}, {Name: "p99", Color: "#e8730c", Points: p99}}, true, 0, 0) +
		"</div>"
}

// LatencyCurve draws latency against percentile the way HdrHistogram's
// plotter does: x is 1/(1-p) on a log axis, so 90%, 99%, 99.9% are evenly
// spaced; y is milliseconds.
func LatencyCurve(title string, h *hdrhistogram.Histogram) string {
	if h == nil || h.TotalCount() == 0 {
		return ""
	}
	const w, ht, left, bottom, top, right = 520.0, 280.0, 56.0, 36.0, 24.0, 12.0
	var pts [][2]float64 // (log10 of 1/(1-p), ms)
	for _, br := range h.CumulativeDistributionWithTicks(5) {
		q := br.Quantile / 100
		if q >= 1 {
			break
		}
		pts = append(pts, [2]float64{math.Log10(1 / (1 - q)), Millis(br.ValueAt)})
	}
	// The last decade reached is where the curve ends: the maximum.
	maxX := 1.0
	if len(pts) > 0 {
		maxX = math.Max(1, math.Ceil(pts[len(pts)-1][0]))
	}
	pts = append(pts, [2]float64{maxX, Millis(h.Max())})
	maxY := niceCeil(Millis(h.Max()))
	px := func(x float64) float64 { return left + (w-left-right)*x/maxX }
	py := func(y float64) float64 { return top + (ht-top-bottom)*(1-y/maxY) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="percentiles" xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f `+
		`%.0f" font-size="10">`, w, ht, w, ht)
	fmt.Fprintf(&b, `<text x="%.0f" y="14" font-size="12">%s</text>`, left, html.EscapeString(title))
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" `+
			`text-anchor="end">%.4g</text>`, left, w-right, py(v), py(v), left-4, py(v)+3, v)
	}
	for e := 0.0; e <= maxX; e++ {
		label := fmt.Sprintf("%g%%", 100*(1-math.Pow(10, -e)))
		if e == 0 {
			label = "0%"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#eee"/><text x="%.1f" y="%.1f" `+
			`text-anchor="middle">%s</text>`, px(e), px(e), top, ht-bottom, px(e), ht-bottom+14, label)
	}
	var ps []string
	for _, p := range pts {
		ps = append(ps, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f6fc5" stroke-width="1.8" points="%s"/>`, strings.Join(ps, " "))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">percentile (log 1/(1−p))</text>`, left, ht-6)
	b.WriteString("</svg>")
	return b.String()
}

// niceCeil is the least of a few round multiples of a power of ten at or
// above v, each with round quarters, so that the axis ticks read well.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Floor(math.Log10(v))
	at := func(m float64) float64 { // divided below 1: 3/10 is 0.3, 3*0.1 is not
		if e < 0 {
			return m / math.Pow(10, -e)
		}
		return m * math.Pow(10, e)
	}
	for _, m := range []float64{1, 1.2, 1.6, 2, 2.4, 3, 4, 5, 6, 8} {
		if at(m) >= v*(1-1e-9) {
			return at(m)
		}
	}
	return at(10)
}

// shareBar is a share drawn as a bar, for the eye.
func shareBar(share float64) string {
	share = math.Max(0, math.Min(1, share))
	return fmt.Sprintf(`<svg class="share" width="100" height="8" style="border:0;margin:0 4px"><rect width="100" height="8" `+
		`fill="#eee"/><rect width="%.0f" height="8" fill="#e8730c"/></svg>`, 100*share)
}

func WriteWarningsHTML(b *strings.Builder, ws []result.Warning, h int) {
	if len(ws) == 0 {
		return
	}
	fmt.Fprintf(b, "<h%d>Warnings</h%d><ul>", h, h)
	for _, w := range ws {
		fmt.Fprintf(b, "<li><b>%s</b>: %s</li>", html.EscapeString(w.Kind), html.EscapeString(w.Message))
	}
	b.WriteString("</ul>")
}

func WriteThresholdsHTML(b *strings.Builder, ts []Threshold, h int) {
	if len(ts) == 0 {
		return
	}
	fmt.Fprintf(b, "<h%d>Thresholds</h%d><ul>", h, h)
	for _, t := range ts {
		verdict := "holds"
		if t.Broken {
			verdict = "<b>broken</b>: " + html.EscapeString(strings.Join(t.Breaches, "; "))
		}
		fmt.Fprintf(b, "<li><code>%s</code> %s</li>", html.EscapeString(t.Expr), verdict)
	}
	b.WriteString("</ul>")
}

// HTML is the suite's report.html: the summary table and the combined
// latency curve, then each run's page a level down, its links into the
// run's own folder.
func (s *Suite) HTML() string {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString(PageHead("probe all against " + s.Target))
	fmt.Fprintf(&b, "<h1>probe all against %s</h1>", esc(s.Target))
	b.WriteString(s.summaryTable().HTML())
	b.WriteString(LatencyCurve("latency by percentile (ms) — all runs", s.latency))
	if len(s.Skipped) > 0 {
		b.WriteString("<p>Skipped:</p><ul>")
		for _, sk := range s.Skipped {
			fmt.Fprintf(&b, "<li><b>%s</b>: %s</li>", esc(sk.Microload), esc(sk.Reason))
		}
		b.WriteString("</ul>")
	}
	WriteThresholdsHTML(&b, s.Thresholds, 2)
	for _, r := range s.Runs {
		fmt.Fprintf(&b, `<h2 id="%s">%s</h2>`, esc(r.Microload), esc(r.Microload))
		r.body(&b, url.PathEscape(r.Microload)+"/", 3)
	}
	b.WriteString("</body></html>\n")
	return b.String()
}
