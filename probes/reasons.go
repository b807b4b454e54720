package probes

import (
	"strings"

	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/result"
)

// FoldReason takes the request's own values out of an error text, so
// that one cause is one reason: a word of at least 8 characters of hex
// digits and dashes with a digit and a non-digit in it (a UUID, a hex id),
// or of at least 12 letters and digits with 2 digits or more (a base-62
// token), becomes "<id>"; in the rest, a run of 4 digits or more (a port,
// a size, a counter, a numeric id) becomes "N". Shorter numbers, as an HTTP status or a
// gRPC code, stay. A word here is a run of letters, digits, '-' and '_';
// its parts between '-' and '_' are folded each when the whole is not an
// id ("req-8f14e45f" is "req-<id>").
func FoldReason(s string) string {
	if !strings.ContainsAny(s, "0123456789") {
		return s // most reasons, and no allocation
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if !wordByte(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && wordByte(s[j]) {
			j++
		}
		foldWord(&b, s[i:j])
		i = j
	}
	return b.String()
}

func wordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_'
}

func foldWord(b *strings.Builder, w string) {
	if isID(w) {
		b.WriteString("<id>")
		return
	}
	for i := 0; i < len(w); {
		if w[i] == '-' || w[i] == '_' {
			b.WriteByte(w[i])
			i++
			continue
		}
		j := i
		for j < len(w) && w[j] != '-' && w[j] != '_' {
			j++
		}
		part := w[i:j]
		if isID(part) {
			b.WriteString("<id>")
		} else {
			foldDigits(b, part)
		}
		i = j
	}
}

// isID says whether w looks generated: hex digits and dashes (8 or more,
// a digit among them, not all digits), or letters and digits (12 or more,
// 2 digits or more).
func isID(w string) bool {
	var digits, hex, alnum int
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
			hex++
			alnum++
		case c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F':
			hex++
			alnum++
		case c >= 'g' && c <= 'z' || c >= 'G' && c <= 'Z':
			alnum++
		case c == '-':
			hex++
		}
	}
	if digits == len(w) {
		return false // a number: "N"
	}
	return digits > 0 && len(w) >= 8 && hex == len(w) || digits >= 2 && len(w) >= 12 && alnum == len(w)
}

// foldDigits writes w with each run of 4 digits or more as "N".
func foldDigits(b *strings.Builder, w string) {
	for i := 0; i < len(w); {
		if w[i] < '0' || w[i] > '9' {
			b.WriteByte(w[i])
			i++
			continue
		}
		j := i
		for j < len(w) && w[j] >= '0' && w[j] <= '9' {
			j++
		}
		if j-i >= 4 {
			b.WriteByte('N')
		} else {
			b.WriteString(w[i:j])
		}
		i = j
	}
}

// Reasons counts errors by reason into a map (Run.Errors): each reason
// folded (FoldReason), at most MaxReasons distinct an operation, the
// others under OtherReasons(op). The zero value is not ready: NewReasons.
type Reasons struct {
	M    map[string]int64
	op   map[string]string // a key's operation
	kept map[string]int    // distinct reasons kept, by operation
}

// NewReasons is a tally into m, which must be empty (nil: a new map).
func NewReasons(m map[string]int64) *Reasons {
	if m == nil {
		m = map[string]int64{}
	}
	return &Reasons{M: m, op: map[string]string{}, kept: map[string]int{}}
}

// maxReasonText is the length of a reason's text, folded.
const maxReasonText = 120

// Add counts n errors of op ("" for none) whose text is text: folded,
// then made one printable line of at most 120 bytes.
func (r *Reasons) Add(op, text string, n int64) {
	r.add(op, result.ReasonKey(op, textline.Of(FoldReason(textline.Of(text, 8*maxReasonText)), maxReasonText)), n)
}

func (r *Reasons) add(op, key string, n int64) {
	if _, ok := r.M[key]; ok {
		r.M[key] += n
		return
	}
	if other := result.OtherReasons(op); key == other || r.kept[op] >= result.MaxReasons {
		key = other
	} else {
		r.kept[op]++
	}
	r.M[key] += n
	r.op[key] = op
}

// AddAll counts what src counted, its most frequent reasons first (those
// are the ones kept when both together have too many).
func (r *Reasons) AddAll(src *Reasons) {
	for _, k := range result.ByCount(src.M) {
		r.add(src.op[k], k, src.M[k])
	}
}
