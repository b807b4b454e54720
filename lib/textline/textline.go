// Package textline makes what a server sent safe for one line of probe's
// terminal or report: no escape sequence, no carriage return, no newline
// that starts a line of the server's choosing, and a bounded length.
package textline

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Max is the length a line from a server is cut to where a caller has no
// bound of its own.
const Max = 300

// MaxNames is how many names a list from a server shows before "and N more".
const MaxNames = 20

// Of is s as one printable line of at most max bytes: invalid UTF-8
// replaced, every control character (ESC, CR, LF, NUL, DEL, C1) and every
// run of spaces made one space, cut between characters with "…".
func Of(s string, max int) string {
	if max <= 0 {
		max = Max
	}
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == '\u2028' || r == '\u2029' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
		if b.Len() > max+utf8.UTFMax {
			break
		}
	}
	out := b.String()
	if len(out) <= max {
		return out
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + "…"
}

// Names is a list of what a server named, each made a printable line of at
// most max bytes, at most MaxNames shown, joined with ", " and followed by
// "and N more" when there were more.
func Names(names []string, max int) string {
	shown := names
	if len(shown) > MaxNames {
		shown = shown[:MaxNames]
	}
	parts := make([]string, len(shown))
	for i, n := range shown {
		parts[i] = Of(n, max)
	}
	out := strings.Join(parts, ", ")
	if more := len(names) - len(shown); more > 0 {
		out += " and " + strconv.Itoa(more) + " more"
	}
	return out
}
