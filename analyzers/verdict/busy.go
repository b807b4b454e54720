package verdict

import (
	"slices"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/machine"
)

// LeaveOutBusySeconds drops the seconds in which other processes used more
// than machine.BusyCores, when every variant keeps a quiet one: a busy
// second slows the same work by as much as an input that matters. It
// returns how many it dropped of each; when a variant would keep none,
// nothing is dropped and the judge withholds a claim of a move.
func LeaveOutBusySeconds(profiles [][]*profile.Profile, requests [][]int64, others [][]float64) []int {
	left := make([]int, len(profiles))
	busy := func(c float64) bool { return c > machine.BusyCores } // -1: not seen, not busy
	for i := range profiles {
		if len(profiles[i]) > 0 && !slices.ContainsFunc(others[i], func(c float64) bool { return !busy(c) }) {
			return left
		}
	}
	for i := range profiles {
		var p []*profile.Profile
		var r []int64
		var o []float64
		for k := range profiles[i] {
			if busy(others[i][k]) {
				left[i]++
				continue
			}
			p, r, o = append(p, profiles[i][k]), append(r, requests[i][k]), append(o, others[i][k])
		}
		profiles[i], requests[i], others[i] = p, r, o
	}
	return left
}
