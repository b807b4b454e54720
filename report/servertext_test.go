package report

import (
	"strings"
	"testing"
	"unicode"

	"github.com/probehq/probe/result"
)

// An error reason or a warning that quotes a server reaches the terminal
// table and report.md as one printable line each: no escape, no carriage
// return, no line of the server's own, capped.
func TestServerTextInReasonsAndWarningsIsOneLine(t *testing.T) {
	evil := "\x1b[2J\rboom\nprobe: all checks passed, exit 0 " + strings.Repeat("x", 10_000)
	r := FromRun(sampleRun("page", 1000, 2000), Analysis{})
	r.Errors = map[string]int64{"GET /x: " + evil: 3}
	r.Warnings = append(r.Warnings, result.Warning{Kind: "hostile\x1b[2J", Message: evil})
	r.Warn("also", evil+" too")
	var table strings.Builder
	r.WriteTable(&table)
	for name, text := range map[string]string{"the terminal table": table.String(), "report.md": r.Markdown()} {
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "probe: all checks passed") || len(line) > 2100 {
				t.Errorf("%s: a line of the server's own or too long (%d bytes): %.200q", name, len(line), line)
			}
			if strings.IndexFunc(line, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }) >= 0 {
				t.Errorf("%s: a control character in %.200q", name, line)
			}
		}
		if !strings.Contains(text, "GET /x: [2J boom probe: all checks passed, exit 0 xxx") {
			t.Errorf("%s lacks the reason as one line:\n%.2000s", name, text)
		}
	}
	// Warn keeps the message as one line in report.json too.
	for _, w := range r.Warnings {
		if w.Kind == "also" && (strings.ContainsAny(w.Message, "\x1b\r\n") || len(w.Message) > maxWarning+len("…")) {
			t.Errorf("warning %s kept as sent: %.200q", w.Kind, w.Message)
		}
	}
}
