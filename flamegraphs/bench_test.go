package flamegraphs

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/google/pprof/profile"
)

// bigProfile has n distinct stacks, 8–24 frames deep, over a few thousand
// function names. With shared, stacks share their roots as a server's do
// (a few handlers, then libraries) and differ towards the leaves; without,
// nearly every frame is a node of its own: the worst case for folding.
func bigProfile(n int, shared bool) *profile.Profile {
	r := rand.New(rand.NewPCG(1, 2))
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	funcs := make([]*profile.Function, 3000)
	locs := make([]*profile.Location, len(funcs))
	for i := range funcs {
		funcs[i] = &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("github.com/example/pkg%d.(*T).Method%d", i%40, i),
			Filename: "/src/x.go"}
		locs[i] = &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: funcs[i], Line: int64(i)}}}
	}
	p.Function, p.Location = funcs, locs
	for i := range n {
		depth := 8 + r.IntN(17)
		s := &profile.Sample{Value: []int64{1, int64(1e7)}}
		for d := range depth { // shared roots, varied leaves: distinct stacks
			k := (d*97 + r.IntN(3+d*d)) % len(locs)
			if shared {
				k = (d*97 + r.IntN(2+d/2)) % len(locs)
			}
			if d == depth-1 {
				k = (i*31 + d) % len(locs)
			}
			s.Location = append([]*profile.Location{locs[k]}, s.Location...)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

func BenchmarkFoldAndRender100k(b *testing.B) {
	for _, c := range []struct {
		name   string
		shared bool
		format string
	}{{"shared-prefixes/html", true, "html"}, {"shared-prefixes/svg", true, "svg"}, {"worst-case/html", false, "html"},
		{"worst-case/svg", false, "svg"}} {
		p := bigProfile(100_000, c.shared)
		format := c.format
		b.Run(c.name, func(b *testing.B) {
			var size int
			for b.Loop() {
				tr, err := Fold(p, FoldOptions{})
				if err != nil {
					b.Fatal(err)
				}
				var buf bytes.Buffer
				if format == "html" {
					err = WriteHTML(&buf, tr, Options{Title: "bench"})
				} else {
					err = WriteSVG(&buf, tr, Options{Title: "bench"})
				}
				if err != nil {
					b.Fatal(err)
				}
				size = buf.Len()
			}
			b.ReportMetric(float64(size)/1e6, "MB")
		})
	}
	_ = io.Discard
}
