package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/probes"
)

func fmtMS(v float64) string {
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

func fmtBytes(n int64) string {
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

func ellipsis(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// maxWarning bounds a warning's line: it may quote what a server sent,
// which lib/textline makes one printable line.
const maxWarning = 2000

// writeWarnings is report.md's Warnings section.
func writeWarnings(b *strings.Builder, ws []probes.Warning) {
	if len(ws) == 0 {
		return
	}
	b.WriteString("\n## Warnings\n\n")
	for _, w := range ws {
		fmt.Fprintf(b, "- **%s**: %s\n", textline.Of(w.Kind, 60), textline.Of(w.Message, maxWarning))
	}
}

// listWarnings ends the terminal table.
func listWarnings(w io.Writer, ws []probes.Warning) {
	for _, wn := range ws {
		fmt.Fprintf(w, "  warning [%s]: %s\n", textline.Of(wn.Kind, 60), textline.Of(wn.Message, maxWarning))
	}
}
