package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// PageHead opens a self-contained report page of plots and tables.
func PageHead(title string) string {
	return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>` + html.EscapeString(title) + `</title><style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left}
svg{background:#fff;border:1px solid #ddd;margin:0 1em 1em 0}
</style></head><body>`
}

// Series is one line of a LinePlot: its legend, colour and points (x, y).
type Series struct {
	Name, Color string
	Points      [][2]float64
}

// LinePlot draws series on linear x and linear or log y, with a dashed
// line at the knee (x) and at the SLO (y, when the y axis is in ms).
func LinePlot(title, xlabel string, ss []Series, logY bool, kneeX, sloY float64) string {
	const w, h, left, bottom, top, right = 420.0, 260.0, 56.0, 36.0, 24.0, 12.0
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.Points {
			minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
			if !logY || p[1] > 0 {
				minY, maxY = math.Min(minY, p[1]), math.Max(maxY, p[1])
			}
		}
	}
	if math.IsInf(minX, 0) || math.IsInf(minY, 0) {
		return ""
	}
	if maxX <= minX {
		maxX = minX + 1
	}
	fy := func(v float64) float64 { return v }
	if logY {
		fy = math.Log10
		minY, maxY = math.Pow(10, math.Floor(math.Log10(minY))), math.Pow(10, math.Ceil(math.Log10(maxY)))
		if sloY > 0 {
			maxY = math.Max(maxY, math.Pow(10, math.Ceil(math.Log10(sloY))))
		}
	} else {
		minY = math.Min(0, minY)
	}
	if maxY <= minY {
		maxY = minY + 1
	}
	px := func(x float64) float64 { return left + (w-left-right)*(x-minX)/(maxX-minX) }
	py := func(y float64) float64 { return top + (h-top-bottom)*(1-(fy(y)-fy(minY))/(fy(maxY)-fy(minY))) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-size="10">`, w, h, w, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="14" font-size="12">%s</text>`, left, html.EscapeString(title))
	var ticks []float64
	if logY {
		for e := math.Log10(minY); e <= math.Log10(maxY)+1e-9; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
	} else {
		for i := 0; i <= 4; i++ {
			ticks = append(ticks, minY+(maxY-minY)*float64(i)/4)
		}
	}
	for _, v := range ticks {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" `+
			`text-anchor="end">%.4g</text>`, left, w-right, py(v), py(v), left-4, py(v)+3, v)
	}
	for i := 0; i <= 4; i++ {
		x := minX + (maxX-minX)*float64(i)/4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.4g</text>`, px(x), h-bottom+14, x)
	}
	if kneeX > 0 {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#c33" stroke-dasharray="4 3"/><text x="%.1f" `+
			`y="%.0f" fill="#c33">knee %.4g</text>`, px(kneeX), px(kneeX), top, h-bottom, px(kneeX)+3, top+10, kneeX)
	}
	if logY && sloY > 0 {
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#c33" stroke-dasharray="2 2"/><text x="%.0f" `+
			`y="%.1f" fill="#c33" text-anchor="end">SLO</text>`, left, w-right, py(sloY), py(sloY), w-right, py(sloY)-3)
	}
	for i, s := range ss {
		var pts []string
		for _, p := range s.Points {
			if logY && p[1] <= 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`, s.Color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`, w-right-90, top+12+12*float64(i), s.Color, html.EscapeString(s.Name))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`, left, h-6, html.EscapeString(xlabel))
	b.WriteString("</svg>")
	return b.String()
}
