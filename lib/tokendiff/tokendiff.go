package analyzers

import (
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Replies are compared part by part: as token sequences (runs of letters
// and digits, and single other bytes), diffed with Myers' algorithm. What
// is not in every reply of a set is a varying fragment.

// tokens splits b into tokens; it returns each token's text.
func tokens(b []byte) []string {
	var out []string
	for i := 0; i < len(b); {
		j := i + 1
		if word(b[i]) {
			for j < len(b) && word(b[j]) {
				j++
			}
		}
		out = append(out, string(b[i:j]))
		i = j
	}
	return out
}

func word(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// fragment is a run of tokens of the first reply that another reply does
// not share, with what stands there in the other.
type fragment struct {
	first, other string
}

// comparison of one reply against others: how much of the first is in
// every one of them, and where they differ.
type comparison struct {
	size      int // bytes of the first reply
	stable    int // bytes of it in every other reply too
	fragments []fragment
	complete  bool // false when the diff ran out of time
}

// stableShare is the share of the first reply's bytes every reply has.
func (c comparison) stableShare() float64 {
	if c.size == 0 {
		return 1
	}
	return float64(c.stable) / float64(c.size)
}

func (c comparison) fragmentBytes() int { return c.size - c.stable }

// compareReplies diffs first against each of others.
func compareReplies(first []byte, others ...[]byte) comparison {
	ft := tokens(first)
	inAll := make([]bool, len(ft))
	for i := range inAll {
		inAll[i] = true
	}
	c := comparison{size: len(first), complete: true}
	var frags []fragment
	for _, o := range others {
		ot := tokens(o)
		a, b := runesOf(ft, ot)
		dmp := diffmatchpatch.New()
		dmp.DiffTimeout = time.Second
		start := time.Now()
		diffs := dmp.DiffMainRunes(a, b, false)
		if time.Since(start) >= dmp.DiffTimeout {
			c.complete = false
		}
		i, j := 0, 0 // token positions in first and other
		var cur fragment
		open := false
		flush := func() {
			if open {
				frags = append(frags, cur)
				cur, open = fragment{}, false
			}
		}
		for _, d := range diffs {
			n := utf8.RuneCountInString(d.Text)
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				flush()
				i += n
				j += n
			case diffmatchpatch.DiffDelete:
				for k := i; k < i+n; k++ {
					inAll[k] = false
					cur.first += ft[k]
				}
				open = true
				i += n
			case diffmatchpatch.DiffInsert:
				for k := j; k < j+n; k++ {
					cur.other += ot[k]
				}
				open = true
				j += n
			}
		}
		flush()
	}
	for k, t := range ft {
		if inAll[k] {
			c.stable += len(t)
		}
	}
	c.fragments = frags
	return c
}

// runesOf maps the tokens of two replies to runes, one per distinct token,
// so that the diff works on tokens.
func runesOf(a, b []string) ([]rune, []rune) {
	ids := map[string]rune{}
	next := rune(1)
	conv := func(ts []string) []rune {
		out := make([]rune, len(ts))
		for i, t := range ts {
			r, ok := ids[t]
			if !ok {
				r = next
				next++
				if next == 0xD800 { // runes a string cannot hold
					next = 0xE000
				}
				ids[t] = r
			}
			out[i] = r
		}
		return out
	}
	return conv(a), conv(b)
}
