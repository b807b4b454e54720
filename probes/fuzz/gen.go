package fuzz

import (
	"math/rand/v2"
	"strings"
)

// generators make fresh values per hole.
type generators struct {
	r       *rand.Rand
	jsonnet *JsonnetGen
}

func newGenerators(r *rand.Rand, extra []Seed) *generators {
	return &generators{r: r, jsonnet: NewJsonnetGen(r, append(append([]Seed{}, JsonnetCorpus...), extra...))}
}

// maxValue bounds a mutated value: mutations of mutations would otherwise
// grow without end, and past a megabyte a server rejects the request
// before any handler runs.
const maxValue = 1 << 20

// fresh draws a value for h that its place can carry.
func (g *generators) fresh(h hole) string {
	for range 8 {
		if v := g.draw(h); Sendable(h.place, v) && len(v) <= valueLimit(h.place) {
			return v
		}
	}
	return h.pool[g.r.IntN(len(h.pool))]
}

func (g *generators) draw(h hole) string {
	switch h.kind {
	case Int:
		return randomInt(g.r)
	case Jsonnet:
		return g.jsonnet.Program()
	case Method:
		if g.r.IntN(4) == 0 {
			return g.randomToken(1 + g.r.IntN(32))
		}
	}
	return h.pool[g.r.IntN(len(h.pool))]
}

func (g *generators) randomToken(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = tokenChars[g.r.IntN(len(tokenChars))]
	}
	return string(b)
}

// mutate changes v, a value of h, into another its place can carry.
func (g *generators) mutate(h hole, v string) string {
	var m string
	switch h.kind {
	case Jsonnet:
		m = g.jsonnet.Mutate(v)
	case Str:
		switch g.r.IntN(3) {
		case 0:
			m = v + g.fresh(h)
		case 1:
			m = strings.Repeat(v, 1+g.r.IntN(min(100, maxValue/(len(v)+1)+1)))
		}
	case Method:
		switch g.r.IntN(3) {
		case 0:
			m = strings.ToLower(v)
		case 1:
			m = v + g.randomToken(1+g.r.IntN(8))
		default:
			m = strings.Repeat(v, 2)
		}
	}
	if m == "" || len(m) > valueLimit(h.place) || !Sendable(h.place, m) {
		return g.fresh(h)
	}
	return m
}

// valueLimit is the longest value a hole at p takes.
func valueLimit(p Place) int {
	if p == InBody || p == InBodyJSON || p == InBodyString {
		return maxValue
	}
	return hugeValue
}
