package verdict

import (
	"slices"
	"testing"

	"github.com/google/pprof/profile"
)

// A second in which other processes used the machine is left out when
// every variant keeps a quiet one; when one would keep none, every second
// stays and the judge withholds a move. A second whose others were not
// seen (-1) is no busy one.
func TestLeaveOutBusySeconds(t *testing.T) {
	p := func(n int) []*profile.Profile {
		out := make([]*profile.Profile, n)
		for i := range out {
			out[i] = &profile.Profile{Period: int64(i + 1)}
		}
		return out
	}
	profiles := [][]*profile.Profile{p(3), p(2), p(2)}
	requests := [][]int64{{10, 11, 12}, {20, 21}, {30, 31}}
	others := [][]float64{{0.1, 0.9, 0.2}, {-1, 0.05}, {0.6, 0.1}}
	left := LeaveOutBusySeconds(profiles, requests, others)
	if !slices.Equal(left, []int{1, 0, 1}) {
		t.Fatalf("left out %v, want [1 0 1]", left)
	}
	if !slices.Equal(requests[0], []int64{10, 12}) || !slices.Equal(requests[2], []int64{31}) || len(requests[1]) != 2 {
		t.Errorf("requests kept %v", requests)
	}
	if profiles[0][1].Period != 3 || len(profiles[2]) != 1 || profiles[2][0].Period != 2 || !slices.Equal(others[2], []float64{0.1}) {
		t.Errorf("the kept profiles are not the quiet seconds'")
	}

	profiles = [][]*profile.Profile{p(2), p(2)}
	requests = [][]int64{{1, 2}, {3, 4}}
	others = [][]float64{{0.1, 0.9}, {0.7, 0.8}}
	if left := LeaveOutBusySeconds(profiles, requests, others); !slices.Equal(left, []int{0, 0}) || len(requests[1]) != 2 {
		t.Errorf("a variant with no quiet second: left out %v, kept %v", left, requests)
	}
}
