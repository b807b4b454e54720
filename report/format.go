package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/result"
	"mvdan.cc/sh/v3/syntax"
)

func FmtMS(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v < 10:
		return fmt.Sprintf("%.2fms", v)
	case v < 1000:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.2fs", v/1000)
}

func FmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func Ellipsis(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// maxWarning bounds a warning's line: it may quote what a server sent,
// which lib/textline makes one printable line.
const maxWarning = 2000

// WriteWarnings is report.md's Warnings section.
func WriteWarnings(b *strings.Builder, ws []result.Warning) {
	if len(ws) == 0 {
		return
	}
	b.WriteString("\n## Warnings\n\n")
	for _, w := range ws {
		fmt.Fprintf(b, "- **%s**: %s\n", textline.Of(w.Kind, 60), textline.Of(w.Message, maxWarning))
	}
}

// ListWarnings ends the terminal table.
func ListWarnings(w io.Writer, ws []result.Warning) {
	for _, wn := range ws {
		fmt.Fprintf(w, "  warning [%s]: %s\n", textline.Of(wn.Kind, 60), textline.Of(wn.Message, maxWarning))
	}
}

// ShellQuote makes s one word to bash, quoted only where it needs to be.
// No word can hold a NUL byte; headers and escaped URLs never do.
func ShellQuote(s string) string {
	q, _ := syntax.Quote(strings.ReplaceAll(s, "\x00", ""), syntax.LangBash)
	return q
}

// PercentileMS is the value at percentile p of a µs histogram, in ms (0 when empty).
func PercentileMS(h *hdrhistogram.Histogram, p float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return Millis(h.ValueAtQuantile(p))
}
