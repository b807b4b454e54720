package analyzers

import (
	"testing"
	"time"
)

var cutSink int

// cutRecurse spends the same time at each of n levels of a recursion, so
// that most of its samples are deeper than the profiler keeps.
//
//go:noinline
func cutRecurse(n int) int {
	s := 0
	for i := range 20_000 {
		s += i ^ n
	}
	if n == 0 {
		return s
	}
	return s + cutRecurse(n-1)
}

//go:noinline
func cutElsewhere(n int) int { return cutRecurse(n) }

//go:noinline
func cutOwnWork() int { return cutRecurse(100) }

// A recursion under an own function is cut on its deep samples, which
// -focus on the own function cannot see: CutShare gives them back, so
// that the own function's share plus it is what -focus on the recursion
// shows when nothing else calls it, and about half of it when another
// caller runs the same recursion as often.
func TestCutShareGivesBackTheCutSamples(t *testing.T) {
	const own = "github.com/probehq/probe/analyzers.cutOwnWork"
	alone := profileWhile(t, time.Second, 2, func(done func() bool) {
		for !done() {
			cutSink += cutOwnWork()
		}
	})
	focus, recursion := focusShare(alone, `analyzers\.cutOwnWork$`), focusShare(alone, `analyzers\.cutRecurse$`)
	cut := CutShare(alone, own)
	t.Logf("alone: -focus own %.1f%%, cut %.1f%%, the recursion %.1f%%", 100*focus, 100*cut, 100*recursion)
	if cut < 0.15 || focus+cut < recursion-0.02 || focus+cut > recursion+0.02 {
		t.Errorf("alone: own %.1f%% + cut %.1f%%, want the recursion's %.1f%% (and most of it cut)", 100*focus, 100*cut, 100*recursion)
	}

	shared := profileWhile(t, 2*time.Second, 2, func(done func() bool) {
		for i := 0; !done(); i++ {
			if i%2 == 0 {
				cutSink += cutOwnWork()
			} else {
				cutSink += cutElsewhere(100)
			}
		}
	})
	focus, recursion = focusShare(shared, `analyzers\.cutOwnWork$`), focusShare(shared, `analyzers\.cutRecurse$`)
	cut = CutShare(shared, own)
	t.Logf("shared: -focus own %.1f%%, cut %.1f%%, the recursion %.1f%%", 100*focus, 100*cut, 100*recursion)
	if got := focus + cut; got < 0.3*recursion || got > 0.7*recursion {
		t.Errorf("shared: own %.1f%% + cut %.1f%%, want about half the recursion's %.1f%%", 100*focus, 100*cut, 100*recursion)
	}
	if c := CutShare(shared, "main.nothingLikeIt"); c != 0 {
		t.Errorf("a function in no sample: cut %.1f%%", 100*c)
	}
}
