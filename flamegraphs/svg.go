package flamegraphs

import (
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"math"
	"strings"
)

// Options style a drawing.
type Options struct {
	Title     string
	Highlight map[string]bool // frames to outline (those findings name)
	Width     int             // SVG width in pixels; default 1200
	MaxFrames int             // HTML: most frames kept; default 100,000
}

const (
	frameHeight = 16
	charWidth   = 7.0 // of 12 px monospace, for eliding names
)

// WriteSVG draws t as a static flame graph, root at the bottom.
func WriteSVG(w io.Writer, t *Tree, o Options) error {
	width := o.Width
	if width == 0 {
		width = 1200
	}
	depth := 0
	t.Root.Walk(func(_ *Node, d int) { depth = max(depth, d) })
	height := (depth+1)*frameHeight + 60
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg" font-family="monospace" font-size="12">
<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f8"/>
<text x="%d" y="24" text-anchor="middle" font-size="16">%s</text>
`, width, height, width, height, width/2, html.EscapeString(o.Title))
	scale := float64(width-20) / float64(max(t.Root.Total, 1))
	var draw func(n *Node, x float64, d int)
	draw = func(n *Node, x float64, d int) {
		wpx := float64(n.Total) * scale
		if t.Diff {
			wpx = math.Max(float64(n.Total), 0) * scale
		}
		if wpx < 0.1 {
			return
		}
		y := height - 20 - (d+1)*frameHeight
		stroke := ""
		if o.Highlight[n.Name] {
			stroke = ` stroke="#000" stroke-width="2"`
		}
		fmt.Fprintf(&b, `<g><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" rx="2"%s/>`,
			html.EscapeString(tooltip(t, n)), x, y, wpx, frameHeight-1, fill(t, n), stroke)
		if label := elide(n.Name, wpx); label != "" {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`, x+3, y+12, html.EscapeString(label))
		}
		b.WriteString("</g>\n")
		cx := x
		for _, c := range n.Children {
			draw(c, cx, d+1)
			cx += float64(c.Total) * scale
		}
	}
	draw(t.Root, 10, 0)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// elide fits a name into wpx pixels, or returns "" when nothing useful fits.
func elide(name string, wpx float64) string {
	fits := int((wpx - 6) / charWidth)
	r := []rune(name)
	switch {
	case fits < 3:
		return ""
	case len(r) <= fits:
		return name
	}
	return string(r[:fits-1]) + "…"
}

func tooltip(t *Tree, n *Node) string {
	root := float64(max(t.Root.Total, 1))
	s := fmt.Sprintf("%s\n%s\ntotal %s (%.2f%%), self %s (%.2f%%)", n.Name, n.File,
		formatValue(float64(n.Total), t.Unit), 100*float64(n.Total)/root, formatValue(float64(n.Self), t.Unit), 100*float64(n.Self)/root)
	if t.Diff {
		s += fmt.Sprintf("\nbefore %s, after %s, delta %+.2f%% of the total", formatValue(n.Base, t.Unit), formatValue(float64(n.Total), t.Unit),
			100*(float64(n.Total)-n.Base)/root)
	}
	return s
}

func formatValue(v float64, unit string) string {
	switch unit {
	case "nanoseconds":
		return fmt.Sprintf("%.3gs", v/1e9)
	case "bytes":
		return fmt.Sprintf("%.3g MB", v/1e6)
	}
	return fmt.Sprintf("%.0f", v)
}

// fill colours a frame by the kind of code, or by its change in a diff.
func fill(t *Tree, n *Node) string {
	if t.Diff {
		return diffColour(float64(n.Total), n.Base)
	}
	h := fnv.New32a()
	h.Write([]byte(n.Name))
	v := float64(h.Sum32()%1000) / 1000
	switch n.Kind {
	case "runtime":
		return fmt.Sprintf("hsl(0,0%%,%.0f%%)", 70+12*v)
	case "std":
		return fmt.Sprintf("hsl(205,65%%,%.0f%%)", 68+14*v)
	case "third-party":
		return fmt.Sprintf("hsl(42,85%%,%.0f%%)", 58+14*v)
	case "own":
		return fmt.Sprintf("hsl(8,80%%,%.0f%%)", 58+14*v)
	}
	return "hsl(0,0%,85%)"
}

// diffColour: red where a frame grew, blue where it shrank, by how much of
// its larger side changed.
func diffColour(after, before float64) string {
	m := math.Max(after, before)
	if m == 0 {
		return "hsl(0,0%,95%)"
	}
	r := (after - before) / m
	l := 95 - 45*math.Min(1, math.Abs(r))
	if r >= 0 {
		return fmt.Sprintf("hsl(0,80%%,%.0f%%)", l)
	}
	return fmt.Sprintf("hsl(220,80%%,%.0f%%)", l)
}
