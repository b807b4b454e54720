package rampreport

import (
	"fmt"
	"html"
	"strings"

	"github.com/probehq/probe/report"
)

// HTML is report.html: the knee in words, the windows, and three plots —
// offered against achieved rate, p99 against rate, sessions in flight
// over time.
func (r *Ramp) HTML() string {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString(report.PageHead("probe ramp"))
	fmt.Fprintf(&b, "<h1>probe ramp</h1><p>%s — %s</p><ul>", esc(r.Target), esc(r.Schedule))
	for _, line := range r.Knee.Says {
		fmt.Fprintf(&b, "<li>%s</li>", esc(line))
	}
	b.WriteString("</ul>")
	var offered, achieved, p99 [][2]float64
	for _, w := range r.Windows {
		offered = append(offered, [2]float64{w.Offered, w.Offered})
		achieved = append(achieved, [2]float64{w.Offered, w.Achieved})
		if w.P99 > 0 {
			p99 = append(p99, [2]float64{w.Offered, w.P99})
		}
	}
	knee := 0.0
	if r.Knee.Window > 0 {
		knee = r.Knee.Rate
	}
	b.WriteString(report.LinePlot("achieved against offered sessions/s", "offered/s",
		[]report.Series{{Name: "offered", Color: "#bbb", Points: offered},
			{Name: "achieved", Color: "#1f6fc5", Points: achieved}}, false, knee, r.SLOMS))
	b.WriteString(report.LinePlot("p99 of a session (ms, log) against offered/s", "offered/s",
		[]report.Series{{Name: "p99", Color: "#e8730c", Points: p99}}, true, knee,
		r.SLOMS))
	var inflight [][2]float64
	for _, w := range r.Windows {
		inflight = append(inflight, [2]float64{w.FromS, w.InFlightMean}, [2]float64{w.ToS, float64(w.InFlightMax)})
	}
	b.WriteString(report.LinePlot("sessions in flight over time (mean, then most, per window)", "seconds",
		[]report.Series{{Name: "in flight", Color: "#2a9d5c", Points: inflight}}, false, 0, 0))
	b.WriteString(r.table().HTML())
	if len(r.Findings) > 0 {
		b.WriteString("<h2>Findings</h2><ol>")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "<li><b>%s</b> (%s): %s<br>Fix: %s</li>", esc(f.Rule), esc(f.Severity), esc(f.Evidence), esc(f.Suggestion))
		}
		b.WriteString("</ol>")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "<p><b>%s</b>: %s</p>", esc(w.Kind), esc(w.Message))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}
