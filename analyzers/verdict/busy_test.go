package verdict

import (
	"slices"
	"testing"
)

// A second in which other processes used the machine is left out when
// every variant keeps a quiet one; when one would keep none, every second
// stays and the judge withholds a move. A second whose others were not
// seen (-1) is no busy one.
func TestLeaveOutBusySeconds(t *testing.T) {
	seconds := func(others ...float64) []Slot {
		out := make([]Slot, len(others))
		for k, c := range others {
			out[k] = Slot{Requests: int64(10 + k), Others: c, Round: k}
		}
		return out
	}
	requests := func(s []Slot) (out []int64) {
		for _, x := range s {
			out = append(out, x.Requests)
		}
		return out
	}
	slots := [][]Slot{seconds(0.1, 0.9, 0.2), seconds(-1, 0.05), seconds(0.6, 0.1)}
	left := LeaveOutBusySeconds(slots)
	if !slices.Equal(left, []int{1, 0, 1}) {
		t.Fatalf("left out %v, want [1 0 1]", left)
	}
	if !slices.Equal(requests(slots[0]), []int64{10, 12}) || !slices.Equal(requests(slots[2]), []int64{11}) ||
		len(slots[1]) != 2 {
		t.Errorf("seconds kept %v", slots)
	}
	if slots[0][1].Round != 2 || slots[2][0].Round != 1 || slots[2][0].Others != 0.1 {
		t.Errorf("the kept seconds are not the quiet ones, with their rounds: %v", slots)
	}

	slots = [][]Slot{seconds(0.1, 0.9), seconds(0.7, 0.8)}
	if left := LeaveOutBusySeconds(slots); !slices.Equal(left, []int{0, 0}) || len(slots[1]) != 2 {
		t.Errorf("a variant with no quiet second: left out %v, kept %v", left, slots)
	}
}
