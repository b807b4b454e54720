package verification

import (
	"testing"

	"github.com/probehq/probe/report"
)

// judge's verdicts from the rounds' CPU per request: confirmed only when
// every variant round beat every original round and the replies were the
// same.
func TestVerificationVerdicts(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name            string
		orig, variant   []float64
		replies         *bool
		want            string
		predicted       float64
		wantWhyNotEmpty bool
	}{
		{"a clear saving", []float64{10, 11, 10.5}, []float64{5, 5.5, 5.2}, &yes, report.Confirmed, 0.5, false},
		{"far from the prediction", []float64{10, 11, 10.5}, []float64{5, 5.5, 5.2}, &yes, report.Confirmed, 0.1, true},
		{"replies changed", []float64{10, 11, 10.5}, []float64{5, 5.5, 5.2}, &no, report.Refuted, 0.5, true},
		{"no saving", []float64{10, 11, 10.5}, []float64{10.6, 11.2, 10.4}, &yes, report.Refuted, 0.5, true},
		{"overlapping rounds", []float64{10, 11, 10.5}, []float64{9, 10.2, 12}, &yes, report.Inconclusive, 0.1, true},
		{"replies vary on their own", []float64{10, 11, 10.5}, []float64{5, 5.5, 5.2}, nil, report.Inconclusive, 0.5, true},
	} {
		v := report.Verification{PredictedSaving: c.predicted, RepliesSame: c.replies}
		judge(&v, c.orig, c.variant, "why of the replies")
		if v.Verdict != c.want || (v.Why != "") != c.wantWhyNotEmpty || v.MeasuredSaving == nil || v.Interval == nil ||
			v.Interval[0] > *v.MeasuredSaving || v.Interval[1] < *v.MeasuredSaving {
			t.Errorf("%s: %+v (saving %v, interval %v), want %s", c.name, v, savingOf(v), v.Interval, c.want)
		}
	}
}

func savingOf(v report.Verification) float64 {
	if v.MeasuredSaving == nil {
		return -1
	}
	return *v.MeasuredSaving
}

// A variant's round may fail requests as the original's rounds did (a
// target that fails some by itself), not a larger share.
func TestVariantMayNotFailMoreThanTheOriginal(t *testing.T) {
	for _, c := range []struct {
		name                 string
		failed, requests     int
		origFailed, origMade int
		refused              bool
	}{
		{"none failed", 0, 400, 0, 400, false},
		{"the original's third", 140, 400, 130, 400, false},
		{"within 2 points and a tenth", 150, 400, 130, 400, false},
		{"more than the original", 200, 400, 130, 400, true},
		{"the original failed none", 10, 400, 0, 400, true},
		{"one where the original failed none", 1, 400, 0, 400, true},
	} {
		err := moreFailed(round{requests: c.requests, failed: c.failed}, c.origFailed, c.origMade)
		if (err != nil) != c.refused {
			t.Errorf("%s: %v, want refused %v", c.name, err, c.refused)
		}
	}
}
