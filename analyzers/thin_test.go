package analyzers

import (
	"strings"
	"testing"
)

// A profile with a little CPU serving requests says what went unnamed; a
// full one, or one serving nothing (a background profile), says nothing.
func TestThinProfile(t *testing.T) {
	for _, tc := range []struct {
		serving float64
		want    string
	}{
		{0, ""},
		{0.06, "no work in it could be named"},
		{0.5, "work under 40% of it went unnamed"},
		{0.8, ""},
		{3, ""},
	} {
		why, ok := ThinProfile(CPUSplit{Total: 4, Serving: tc.serving})
		if ok != (tc.want != "") || !strings.Contains(why, tc.want) {
			t.Errorf("serving %.2f s: %v %q, want %q", tc.serving, ok, why, tc.want)
		}
	}
}
