package abreport

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/internal/reporttest"
)

func TestGoldenABJSON(t *testing.T) {
	ab := buildAB(sampleSides())
	ab.Order = "interleaved A B A B"
	reporttest.GoldenJSON(t, "ab.json", ab)
}

func TestGoldenAB(t *testing.T) {
	ab := buildAB(sampleSides())
	ab.Order = "interleaved A B A B"
	reporttest.Golden(t, "ab.md", ab.Markdown())
	reporttest.Golden(t, "ab.html", ab.HTML())
	reporttest.Golden(t, "ab.table", reporttest.Table(ab))
}

// Tests (e2e, internal/cli) read report.json into AB: it decodes back to
// what was written, byte for byte.
func TestABJSONDecodesToItsType(t *testing.T) {
	ab := buildAB(sampleSides())
	// A side the interval cannot bound is null in report.json.
	ab.Comparisons[0].BeforeCI = report.Interval{math.Inf(-1), 3}
	ab.Comparisons[0].AfterCI = report.Interval{0.5, math.Inf(1)}
	js, err := ab.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var decoded AB
	if err := json.Unmarshal(js, &decoded); err != nil {
		t.Fatal(err)
	}
	again, err := report.Marshal(&decoded)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(js) {
		t.Errorf("report.json decoded and written again differs:\n%s\nwant\n%s", again, js)
	}
}
