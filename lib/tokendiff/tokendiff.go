// Package tokendiff compares replies part by part: as token sequences
// (runs of letters and digits, and single other bytes), diffed with
// Myers' algorithm. What is not in every reply of a set is a varying
// fragment.
package tokendiff

import (
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

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

// Fragment is a run of tokens of the first reply that another reply does
// not share, with what stands there in the other.
type Fragment struct {
	First, Other string
}

// Comparison of one reply against others: how much of the first is in
// every one of them, and where they differ.
type Comparison struct {
	Size      int // bytes of the first reply
	Stable    int // bytes of it in every other reply too
	Fragments []Fragment
	Complete  bool // false when the diff ran out of time
}

// StableShare is the share of the first reply's bytes every reply has.
func (c Comparison) StableShare() float64 {
	if c.Size == 0 {
		return 1
	}
	return float64(c.Stable) / float64(c.Size)
}

// FragmentBytes is how many bytes of the first reply some other lacks.
func (c Comparison) FragmentBytes() int { return c.Size - c.Stable }

// Compare diffs first against each of others.
func Compare(first []byte, others ...[]byte) Comparison {
	ft := tokens(first)
	inAll := make([]bool, len(ft))
	for i := range inAll {
		inAll[i] = true
	}
	c := Comparison{Size: len(first), Complete: true}
	var frags []Fragment
	for _, o := range others {
		ot := tokens(o)
		a, b := runesOf(ft, ot)
		dmp := diffmatchpatch.New()
		dmp.DiffTimeout = time.Second
		start := time.Now()
		diffs := dmp.DiffMainRunes(a, b, false)
		if time.Since(start) >= dmp.DiffTimeout {
			c.Complete = false
		}
		i, j := 0, 0 // token positions in first and other
		var cur Fragment
		open := false
		flush := func() {
			if open {
				frags = append(frags, cur)
				cur, open = Fragment{}, false
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
					cur.First += ft[k]
				}
				open = true
				i += n
			case diffmatchpatch.DiffInsert:
				for k := j; k < j+n; k++ {
					cur.Other += ot[k]
				}
				open = true
				j += n
			}
		}
		flush()
	}
	for k, t := range ft {
		if inAll[k] {
			c.Stable += len(t)
		}
	}
	c.Fragments = frags
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
