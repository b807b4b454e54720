package pipeline

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func TestRampStops(t *testing.T) {
	got, err := RampStops([]string{"past-knee", " p99_ms > 250 ", "errors>5%", "in_flight>100", "never"})
	want := []RampStop{{Metric: "past-knee"}, {Metric: "p99_ms", Limit: 250}, {Metric: "errors", Limit: 0.05},
		{Metric: "in_flight", Limit: 100}, {Metric: "never"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v %v, want %v", got, err, want)
	}
	if got, _ := RampStops(nil); !reflect.DeepEqual(got, []RampStop{{Metric: "past-knee"}}) {
		t.Errorf("no rules: %v, want past-knee", got)
	}
	for _, bad := range []string{"soon", "p99_ms<3", "errors>1.2.3%", "cpu>2"} {
		if _, err := RampStops([]string{bad}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// window is one window of rate sessions a second for a second, whose
// sessions took ms each and of which failed failed.
func window(i int, rate float64, ms int64, failed int64, inFlight int) result.WindowStats {
	h := hdrhistogram.New(1, 60_000_000, 3)
	ok := int64(rate) - failed
	for range ok {
		h.RecordValue(ms * 1000)
	}
	w := result.WindowStats{Started: int64(rate), Failed: failed, Completed: ok, Achieved: float64(ok), Latency: h, InFlightMax: inFlight}
	w.From, w.To, w.Rate = time.Duration(i)*time.Second, time.Duration(i+1)*time.Second, rate
	return w
}

// Each rule ends the ramp on the window that breaks it, and says why.
func TestRampStopJudgesWindows(t *testing.T) {
	knee := RampKneeRule(100*time.Millisecond, 0.01)
	held := []result.WindowStats{window(0, 100, 10, 0, 3), window(1, 200, 10, 0, 4)}
	slow := append(held[:2:2], window(2, 300, 500, 0, 150))
	for _, tc := range []struct {
		rule string
		ws   []result.WindowStats
		want string
	}{
		{"p99_ms>250", held, ""},
		{"p99_ms>250", slow, "p99 500 ms > 250"},
		{"in_flight>100", slow, "150 sessions in flight"},
		{"errors>10%", append(held[:2:2], window(2, 300, 10, 60, 5)), "20.0% of sessions failed"},
		{"never", slow, ""},
		{"past-knee", append(slow, window(3, 400, 600, 0, 300)), "past the knee"},
	} {
		rules, err := RampStops([]string{tc.rule})
		if err != nil {
			t.Fatal(err)
		}
		got := rampStopFunc(rules, knee)(tc.ws)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s after %d windows: %q, want %q", tc.rule, len(tc.ws), got, tc.want)
		}
	}
}
