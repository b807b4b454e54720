package fuzz

import (
	"math/rand/v2"
	"strings"
)

// generators make fresh values per kind of hole.
type generators struct {
	r       *rand.Rand
	jsonnet *JsonnetGen
}

func newGenerators(r *rand.Rand, extra []Seed) *generators {
	return &generators{r: r, jsonnet: NewJsonnetGen(r, append(append([]Seed{}, JsonnetCorpus...), extra...))}
}

func (g *generators) fresh(k Kind) string {
	pick := func(vs []string) string { return vs[g.r.IntN(len(vs))] }
	switch k {
	case Int:
		return randomInt(g.r)
	case Uint:
		return pick(boundaryUints())
	case Str:
		return pick(boundaryStrings())
	case JSON:
		return pick(boundaryJSON())
	default:
		return g.jsonnet.Program()
	}
}

// maxValue bounds a mutated value: mutations of mutations would otherwise
// grow without end, and past a megabyte a server rejects the request
// before any handler runs.
const maxValue = 1 << 20

func (g *generators) mutate(k Kind, v string) string {
	var m string
	switch k {
	case Jsonnet:
		m = g.jsonnet.Mutate(v)
	case Str:
		switch g.r.IntN(3) {
		case 0:
			m = v + g.fresh(Str)
		case 1:
			m = strings.Repeat(v, 1+g.r.IntN(min(100, maxValue/(len(v)+1)+1)))
		}
	}
	if m == "" || len(m) > maxValue {
		return g.fresh(k)
	}
	return m
}
