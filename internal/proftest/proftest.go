// Package proftest is, for tests only, a CPU profile written as folded
// stacks: the flame graph's tests and the report's browser test draw the
// same small profiles.
package proftest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// Folded is a CPU profile of the stacks given outermost first, their
// frames separated by ";" ("main;serve;gzip"), each with its CPU value in
// nanoseconds; every frame is the application's (/work/app/x.go).
func Folded(stacks map[string]int64) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	funcs := map[string]*profile.Function{}
	for st, v := range stacks {
		s := &profile.Sample{Value: []int64{1, v}}
		names := strings.Split(st, ";")
		for i := len(names) - 1; i >= 0; i-- { // leaf first
			f := funcs[names[i]]
			if f == nil {
				f = &profile.Function{ID: uint64(len(funcs) + 1), Name: names[i], Filename: "/work/app/x.go"}
				funcs[names[i]] = f
				p.Function = append(p.Function, f)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f, Line: int64(10 + i)}}}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

// ManyOneFrame is a CPU profile of n one-frame samples, each of a
// function of its own (window w's), and one sample of main.render holding
// as much CPU as all of them: what a fleet's profiler sends when every
// window has functions of its own.
func ManyOneFrame(w, n int) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
	}
	add := func(name string, v int64) {
		fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, Filename: "/work/app/main.go"}
		loc := &profile.Location{ID: fn.ID, Line: []profile.Line{{Function: fn}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{v / 10_000_000, v}})
	}
	for i := range n {
		add(fmt.Sprintf("main.w%df%d", w, i), 10_000_000)
	}
	add("main.render", int64(n)*10_000_000)
	return p
}

// WriteFile writes p to path as a pprof file; an error fails the test.
func WriteFile(t testing.TB, path string, p *profile.Profile) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
}
