package verdict

import (
	"slices"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/machine"
)

// Slot is one profiled second of a variant.
type Slot struct {
	Profile  *profile.Profile
	Requests int64   // sent in the second
	Others   float64 // cores other processes used in it (-1: not seen)
	Round    int     // the turn of the variants' cycle it was measured in
}

// LeaveOutBusySeconds drops the seconds in which other processes used more
// than machine.BusyCores, when every variant keeps a quiet one: a busy
// second slows the same work by as much as an input that matters. It
// returns how many it dropped of each; when a variant would keep none,
// nothing is dropped and the judge withholds a claim of a move.
func LeaveOutBusySeconds(slots [][]Slot) []int {
	left := make([]int, len(slots))
	busy := func(s Slot) bool { return s.Others > machine.BusyCores } // -1: not seen, not busy
	for i := range slots {
		if len(slots[i]) > 0 && !slices.ContainsFunc(slots[i], func(s Slot) bool { return !busy(s) }) {
			return left
		}
	}
	for i := range slots {
		n := len(slots[i])
		slots[i] = slices.DeleteFunc(slots[i], busy)
		left[i] = n - len(slots[i])
	}
	return left
}
