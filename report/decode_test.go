package report

import (
	"encoding/json"
	"math"
	"testing"
)

// Tests (e2e, internal/cli) read report.json into these types: each kind
// decodes back to what was written, byte for byte.
func TestReportJSONDecodesToItsType(t *testing.T) {
	ab := buildAB(sampleSides())
	// A side the interval cannot bound is null in report.json.
	ab.Comparisons[0].BeforeCI = Interval{math.Inf(-1), 3}
	ab.Comparisons[0].AfterCI = Interval{0.5, math.Inf(1)}
	for name, tc := range map[string]struct {
		doc     Document
		decoded any
	}{
		"run":   {goldenRun(), &RunReport{}},
		"suite": {NewSuite("http://127.0.0.1:1", []*RunReport{goldenRun()}), &Suite{}},
		"ab":    {ab, &AB{}},
	} {
		js, err := tc.doc.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, tc.decoded); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := marshal(tc.decoded)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(js) {
			t.Errorf("%s: report.json decoded and written again differs:\n%s\nwant\n%s", name, again, js)
		}
	}
}
