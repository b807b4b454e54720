package stats

import (
	"fmt"
	"strings"
	"testing"
)

func step(rate, achieved, growth, mean, p99, errs float64) LoadStep {
	return LoadStep{Rate: rate, Achieved: achieved, Seconds: 10, InFlightMean: mean, InFlightGrowth: growth, P99: p99, Errors: errs,
		Sessions: int64(rate * 10)}
}

func TestFindKnee(t *testing.T) {
	rule := KneeRule{SLO: 500, MaxErrors: 0.01}
	held := step(100, 100, 0, 4, 50, 0)
	for _, tc := range []struct {
		name  string
		steps []LoadStep
		found bool
		rate  float64
		why   string
	}{
		{"grows", []LoadStep{held, step(200, 200, 0.1, 8, 60, 0), step(300, 250, 50, 250, 900, 0), step(400, 250, 150, 1000, 3000, 0)},
			true, 200, "grow by 50"},
		{"slo", []LoadStep{held, step(200, 200, 0, 8, 700, 0), step(300, 300, 0, 12, 800, 0)}, true, 100, "passes the SLO"},
		{"errors", []LoadStep{held, step(200, 190, 0, 8, 60, 0.05), step(300, 280, 0, 12, 60, 0.08)}, true, 100, "fail"},
		{"blip", []LoadStep{held, step(200, 200, 0, 8, 600, 0), step(300, 300, 0, 12, 60, 0), step(400, 400, 0, 16, 70, 0)}, false, 400, ""},
		{"never", []LoadStep{held, step(200, 200, 0, 8, 60, 0)}, false, 200, ""},
		{"at once", []LoadStep{step(100, 50, 50, 300, 5000, 0), step(200, 50, 150, 900, 9000, 0)}, true, 0, "grow"},
	} {
		k := FindKnee(tc.steps, rule)
		if k.Found != tc.found || k.Rate != tc.rate {
			t.Errorf("%s: found %v at %g, want %v at %g (%q)", tc.name, k.Found, k.Rate, tc.found, tc.rate, k.Why)
		}
		if tc.found && !strings.Contains(k.Why[k.Past], tc.why) {
			t.Errorf("%s: why %q, want %q", tc.name, k.Why[k.Past], tc.why)
		}
	}
}

// A stable window in which sessions ramp up from nothing is no growth:
// what grew is small against what is in flight.
func TestHoldsWithSmallGrowth(t *testing.T) {
	if ok, why := (KneeRule{MaxErrors: 0.01}).Holds(step(50, 50, 0.2, 4, 80, 0)); !ok {
		t.Error(why)
	}
}

func ExampleFindKnee() {
	steps := []LoadStep{
		{Rate: 100, Achieved: 100, Seconds: 60, InFlightMean: 5, InFlightGrowth: 0, P99: 80, Sessions: 6000},
		{Rate: 200, Achieved: 199, Seconds: 60, InFlightMean: 11, InFlightGrowth: 0.05, P99: 120, Sessions: 12000},
		{Rate: 400, Achieved: 260, Seconds: 60, InFlightMean: 4200, InFlightGrowth: 140, P99: 31000, Sessions: 24000},
		{Rate: 800, Achieved: 250, Seconds: 60, InFlightMean: 25000, InFlightGrowth: 550, P99: 60000, Sessions: 48000},
	}
	k := FindKnee(steps, KneeRule{SLO: 1000, MaxErrors: 0.01})
	fmt.Printf("knee %g/s; past it: %s\n", k.Rate, k.Why[k.Past])
	fmt.Printf("Little's law at the knee: %.0f in flight\n", LittleL(200, 55))
	// Output:
	// knee 200/s; past it: sessions in flight grow by 140.0 a second
	// Little's law at the knee: 11 in flight
}
