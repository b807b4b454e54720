package pipeline

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// The overhead's legs take turns, off then on, each of the leg's length;
// only the on legs profile, and the loss is one minus the ratio of the
// medians of ok replies a second.
func TestProfilingOverheadTakesTurns(t *testing.T) {
	var seen []bool
	var legs []time.Duration
	rps := map[bool][]int64{false: {1000, 1100, 900}, true: {950, 1000, 870}}
	n := map[bool]int{}
	load := func(ctx context.Context, ml probes.Microload, tg *probes.Target, o probes.LoadOptions) (*result.Run, error) {
		profiled := o.Profile != nil
		seen, legs = append(seen, profiled), append(legs, o.Duration)
		calls := rps[profiled][n[profiled]]
		n[profiled]++
		return &result.Run{Duration: time.Second, Ops: []*result.OpStats{op("GET /", false, calls+10), {Name: "GET /x", Errors: 10}}}, nil
	}
	p := New(Options{Load: load})
	o := probes.LoadOptions{Duration: 10 * time.Second, Warmup: 2 * time.Second,
		Profile: &target.ProfileOptions{Window: 5 * time.Second}}
	got, err := p.ProfilingOverhead(context.Background(), &probes.HTTP{Path: "/"}, nowhere(t), o, 3*time.Second, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 6 || seen[0] || !seen[1] || seen[2] || !seen[3] || seen[4] || !seen[5] {
		t.Errorf("legs profiled %v: want off, on, off, on, off, on", seen)
	}
	for _, d := range legs {
		if d != 3*time.Second {
			t.Errorf("a leg of %v, want 3s", d)
		}
	}
	// Medians: 1000 off, 950 on; errors are not throughput.
	if got.OffRPS != 1000 || got.OnRPS != 950 || math.Abs(got.Loss-0.05) > 1e-9 || len(got.Legs) != 6 {
		t.Errorf("overhead %+v: want 1000 off, 950 on, loss 5%%", got)
	}
	if l := got.Line(); !strings.Contains(l, "5.0% of its throughput") || !strings.Contains(l, "3 rounds of 3 s") {
		t.Errorf("line %q", l)
	}
}
