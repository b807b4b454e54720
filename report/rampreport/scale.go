package rampreport

import (
	"fmt"
	"html"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/report"
)

// Scale is `probe scale`: the same target at growing sizes of its data,
// each size's figures, and how each figure grows.
type Scale struct {
	report.Summary
	Mode     string       `json:"fixture_mode,omitempty"`
	Vaults   string       `json:"vaults"` // how the data was made: "realistic", "synthetic", "given"
	Sizes    []int        `json:"sizes"`
	Points   []ScalePoint `json:"points"`
	Growth   []Growth     `json:"growth"`
	Sentence []string     `json:"says"`
}

// ScalePoint is one size's figures.
type ScalePoint struct {
	Notes      int                       `json:"notes"`
	LoadS      float64                   `json:"load_s"`                 // from start until it served
	RSSMB      float64                   `json:"rss_mb"`                 // resident after load
	Changes    int                       `json:"changes"`                // notes changed and timed: --changes, more if cheap
	WriteMS    float64                   `json:"write_ms"`               // one changed note: the write (a syncing server's sync), median
	WriteCPUMS *float64                  `json:"write_cpu_ms,omitempty"` // the target's CPU over a write, mean (writeCPU)
	FreshMS    map[string]float64        `json:"freshness_ms"`           // place → median time until a reader saw the change
	Lost       int                       `json:"lost"`
	Microloads map[string]ScaleMicroload `json:"microloads"`
	Error      string                    `json:"error,omitempty"` // this size could not be measured
}

// writeCPU is the target's CPU over a write, the mean (/proc counts it in
// ticks of 10 ms: a cheap write's add up only over many): unlike a write's
// time, a busy machine hardly moves it. 0 where it was not read (a target
// probe did not start: WriteCPUMS nil).
func (p ScalePoint) writeCPU() float64 {
	if p.WriteCPUMS == nil {
		return 0
	}
	return *p.WriteCPUMS
}

// ScaleMicroload is one microload at one size.
type ScaleMicroload struct {
	CPUPerReqMS float64             `json:"cpu_per_req_ms"` // the target's CPU per request
	RPS         float64             `json:"rps"`
	Latency     report.Latency      `json:"latency"`
	Findings    []analyzers.Finding `json:"findings,omitempty"`
	// Settle is the wait for a quiet target before this microload (after
	// the size's changes or the microload before it); nil: none.
	Settle *report.Settle `json:"settle,omitempty"`
}

// Growth is one figure's fit against the size.
type Growth struct {
	Figure   string    `json:"figure"` // "load_s", "rss_mb", "write_ms", "freshness_ms.page", "cpu_per_req_ms.page", …
	Slope    float64   `json:"slope"`
	Interval []float64 `json:"interval,omitempty"` // the slope's 95% interval; none with two sizes
	Shape    string    `json:"shape"`              // constant, sublinear, linear, superlinear, unclear
	Says     string    `json:"says"`
	Lo, Hi   float64   `json:"-"` // the interval, ±Inf when there is none
}

// figures are the figures fitted, with how to read them.
func (s *Scale) figures() []figure {
	fs := []figure{
		{"load_s", "load time", func(p ScalePoint) float64 { return p.LoadS }},
		{"rss_mb", "RSS after load", func(p ScalePoint) float64 { return p.RSSMB }},
		{"write_ms", "one changed note (the write and its sync)", func(p ScalePoint) float64 { return p.WriteMS }},
	}
	if slices.ContainsFunc(s.Points, func(p ScalePoint) bool { return p.WriteCPUMS != nil }) {
		fs = append(fs, figure{"write_cpu_ms", "the target's CPU for one changed note", ScalePoint.writeCPU})
	}
	places := map[string]bool{}
	micro := map[string]bool{}
	for _, p := range s.Points {
		for pl := range p.FreshMS {
			places[pl] = true
		}
		for m := range p.Microloads {
			micro[m] = true
		}
	}
	for _, pl := range slices.Sorted(maps.Keys(places)) {
		fs = append(fs, figure{"freshness_ms." + pl, "a change seen on the " + pl, func(p ScalePoint) float64 { return p.FreshMS[pl] }})
	}
	for _, m := range slices.Sorted(maps.Keys(micro)) {
		fs = append(fs, figure{"cpu_per_req_ms." + m, "CPU per " + m + " request",
			func(p ScalePoint) float64 { return p.Microloads[m].CPUPerReqMS }})
	}
	return fs
}

type figure struct {
	id, name string
	of       func(ScalePoint) float64
}

// Fit fits every figure's growth and says it in words.
func (s *Scale) Fit() {
	s.Growth, s.Sentence = nil, nil
	for _, f := range s.figures() {
		var xs, ys []float64
		for _, p := range s.Points {
			if p.Error == "" {
				xs, ys = append(xs, float64(p.Notes)), append(ys, f.of(p))
			}
		}
		g, err := stats.FitGrowth(xs, ys)
		if err != nil {
			continue
		}
		gr := Growth{Figure: f.id, Slope: g.Slope, Lo: g.Lo, Hi: g.Hi, Shape: g.Shape()}
		if !math.IsInf(g.Lo, 0) && !math.IsInf(g.Hi, 0) {
			gr.Interval = []float64{g.Lo, g.Hi}
		}
		gr.Says = growthWords(f, gr)
		s.Growth = append(s.Growth, gr)
		s.Sentence = append(s.Sentence, gr.Says)
	}
}

// growthWords says a growth as a reader of the seeds would.
func growthWords(f figure, g Growth) string {
	slope := fmt.Sprintf("slope %.2f", g.Slope)
	if !math.IsInf(g.Hi, 0) {
		slope = fmt.Sprintf("slope %.2f, 95%% interval %.2f to %.2f", g.Slope, g.Lo, g.Hi)
	}
	what := map[string]string{
		"constant":    "does not grow with the number of notes",
		"sublinear":   "grows more slowly than the number of notes",
		"linear":      "grows linearly with the number of notes",
		"superlinear": "grows faster than the number of notes",
		"unclear":     "varies too much across the sizes to say how it grows",
	}[g.Shape]
	why := ""
	switch {
	case strings.HasPrefix(f.id, "cpu_per_req_ms.") && g.Shape == "linear":
		why = ": per-request work walks the data"
	case strings.HasPrefix(f.id, "cpu_per_req_ms.") && g.Shape == "constant":
		why = ": the work of a request does not depend on the data"
	case f.id == "write_ms" && g.Shape == "linear":
		why = ": one changed note costs time proportional to the vault, a sync re-renders everything"
	case f.id == "write_cpu_ms" && g.Shape == "linear":
		why = ": one changed note costs CPU proportional to the vault, a sync re-renders everything"
	case strings.HasPrefix(f.id, "write_") && g.Shape == "constant":
		why = ": a change costs the same at any size, the sync does only what changed"
	case strings.HasPrefix(f.id, "freshness_ms.") && g.Shape == "linear":
		why = ": a reader waits longer for a change the larger the vault"
	}
	return fmt.Sprintf("%s %s (%s)%s", capitalise(f.name), what, slope, why)
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// GrowthOf is the fitted growth of a figure, if it was fitted.
func (s *Scale) GrowthOf(id string) (Growth, bool) {
	for _, g := range s.Growth {
		if g.Figure == id {
			return g, true
		}
	}
	return Growth{}, false
}

func (s *Scale) JSON() ([]byte, error) { return report.Marshal(s) }

func (s *Scale) Page() string { return "report.html" }

func (s *Scale) Files() (map[string][]byte, error) {
	return map[string][]byte{"report.html": []byte(s.HTML())}, nil
}

// table is the figures by size.
func (s *Scale) table() *report.Table {
	cols := []report.Column{{Title: "notes", Right: true}, {Title: "load", Right: true}, {Title: "RSS", Right: true},
		{Title: "changes", Right: true}, {Title: "change", Right: true}}
	figs := s.figures()
	for _, f := range figs[3:] {
		title := strings.TrimPrefix(strings.TrimPrefix(f.id, "freshness_ms."), "cpu_per_req_ms.") +
			map[bool]string{true: " seen", false: " CPU/req"}[strings.HasPrefix(f.id, "freshness")]
		if f.id == "write_cpu_ms" {
			title = "change CPU"
		}
		cols = append(cols, report.Column{Title: title, Right: true})
	}
	t := &report.Table{Columns: cols}
	for _, p := range s.Points {
		if p.Error != "" {
			row := []string{fmt.Sprint(p.Notes), "failed: " + report.Ellipsis(p.Error, 60)}
			for len(row) < len(cols) {
				row = append(row, "")
			}
			t.AddRow(row...)
			continue
		}
		row := []string{fmt.Sprint(p.Notes), fmt.Sprintf("%.2fs", p.LoadS), fmt.Sprintf("%.0f MB", p.RSSMB), fmt.Sprint(p.Changes),
			report.FmtMS(p.WriteMS)}
		for _, f := range figs[3:] {
			row = append(row, report.FmtMS(f.of(p)))
		}
		t.AddRow(row...)
	}
	return t
}

// lostLines say which sizes' changes never showed.
func (s *Scale) lostLines() []string {
	var out []string
	for _, p := range s.Points {
		if p.Lost > 0 {
			out = append(out, fmt.Sprintf("at %d notes %d changes never showed within the freshness timeout: the target lost the "+
				"write, or shows it later than the timeout", p.Notes, p.Lost))
		}
	}
	return out
}

func (s *Scale) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "scale against %s (%s notes%s)\n", s.Target, s.Vaults, s.modeWords())
	s.table().Text(w)
	for _, line := range append(s.lostLines(), s.Sentence...) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	for i, f := range s.Findings {
		fmt.Fprintf(w, "  %d. %s [%s, %s] %.0f%% CPU — %s\n     %s\n", i+1, f.Rule, f.Class, f.Severity, 100*f.CPUShare, f.Endpoint, f.Evidence)
	}
	report.ListWarnings(w, s.Warnings)
}

func (s *Scale) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# probe scale against %s\n\n%s notes%s; sizes %s.\n\n", s.Target, s.Vaults, s.modeWords(), joinInts(s.Sizes))
	b.WriteString(s.table().Markdown())
	for _, line := range s.lostLines() {
		b.WriteString("\n**" + line + ".**\n")
	}
	b.WriteString("\n## How each figure grows\n\n")
	for _, line := range s.Sentence {
		b.WriteString("- " + line + "\n")
	}
	if len(s.Findings) > 0 {
		b.WriteString("\n## Findings at the largest size\n\n")
		for i, f := range s.Findings {
			fmt.Fprintf(&b, "%d. **%s** (%s) on %s: %.0f%% of CPU. Evidence: %s\n", i+1, f.Rule, f.Class, f.Endpoint, 100*f.CPUShare, f.Evidence)
		}
	}
	report.WriteWarnings(&b, s.Warnings)
	return b.String()
}

// modeWords is ", per-request" on the fixture, nothing on another server.
func (s *Scale) modeWords() string {
	if s.Mode == "" {
		return ""
	}
	return ", " + s.Mode
}

func joinInts(v []int) string {
	var s []string
	for _, n := range v {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, ", ")
}

// HTML is report.html: the table, the sentences and one log-log plot per
// figure.
func (s *Scale) HTML() string {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString(report.PageHead("probe scale"))
	fmt.Fprintf(&b, "<h1>probe scale</h1><p>%s, %s notes%s</p>", esc(s.Target), esc(s.Vaults), esc(s.modeWords()))
	b.WriteString(s.table().HTML())
	b.WriteString("<ul>")
	for _, line := range s.Sentence {
		fmt.Fprintf(&b, "<li>%s</li>", esc(line))
	}
	b.WriteString("</ul><h2>Each figure against the number of notes (log axes)</h2>")
	for _, f := range s.figures() {
		var pts [][2]float64
		for _, p := range s.Points {
			if v := f.of(p); p.Error == "" && v > 0 {
				pts = append(pts, [2]float64{float64(p.Notes), v})
			}
		}
		g, _ := s.GrowthOf(f.id)
		b.WriteString(logLogPlot(f.name, pts, g))
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "<p><b>%s</b>: %s</p>", esc(w.Kind), esc(w.Message))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// logLogPlot draws points (size, value) on log axes with the fitted line.
func logLogPlot(title string, pts [][2]float64, g Growth) string {
	const w, h, left, bottom, top, right = 360.0, 240.0, 56.0, 36.0, 24.0, 12.0
	if len(pts) == 0 {
		return ""
	}
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
		minY, maxY = math.Min(minY, p[1]), math.Max(maxY, p[1])
	}
	lx0, lx1 := math.Log10(minX)-0.05, math.Log10(maxX)+0.05
	ly0, ly1 := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
	if ly1 <= ly0 {
		ly1 = ly0 + 1
	}
	px := func(x float64) float64 { return left + (w-left-right)*(math.Log10(x)-lx0)/(lx1-lx0) }
	py := func(y float64) float64 { return top + (h-top-bottom)*(1-(math.Log10(y)-ly0)/(ly1-ly0)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-size="10">`, w, h, w, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="14" font-size="12">%s</text>`, left, html.EscapeString(title))
	for e := ly0; e <= ly1; e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="end">%g</text>`, left, w-right, py(v), py(v), left-4, py(v)+3, v)
	}
	for _, p := range pts {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`, px(p[0]), h-bottom+14, p[0])
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="#1f6fc5"/>`, px(p[0]), py(p[1]))
	}
	if g.Figure != "" && len(pts) >= 2 {
		// The fitted line through the points' centre of mass on log axes.
		var mx, my float64
		for _, p := range pts {
			mx, my = mx+math.Log10(p[0]), my+math.Log10(p[1])
		}
		mx, my = mx/float64(len(pts)), my/float64(len(pts))
		at := func(x float64) float64 { return math.Pow(10, my+g.Slope*(math.Log10(x)-mx)) }
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e8730c" stroke-dasharray="4 3"/>`, px(minX), py(at(minX)),
			px(maxX), py(at(maxX)))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" fill="#e8730c">slope %.2f</text>`, w-right, h-6, g.Slope)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">notes</text>`, left, h-6)
	b.WriteString("</svg>")
	return b.String()
}

// ensure Scale is a Document.
var _ report.Document = (*Scale)(nil)

// MicroloadAt is one microload's figures from its report at one size.
func MicroloadAt(r *report.Run) ScaleMicroload {
	m := ScaleMicroload{RPS: r.Latency.RPS, Latency: r.Latency, Findings: r.Findings}
	if p := r.TargetProcess; p != nil && r.Latency.Requests > 0 {
		m.CPUPerReqMS = 1000 * p.CPUSeconds / float64(r.Latency.Requests)
	}
	return m
}
