package report

import (
	"encoding/json"
	"testing"
)

// Tests (e2e, internal/cli) read report.json into these types: each kind
// decodes back to what was written, byte for byte.
func TestReportJSONDecodesToItsType(t *testing.T) {
	for name, tc := range map[string]struct {
		doc     Document
		decoded any
	}{
		"run":   {goldenRun(), &Run{}},
		"suite": {NewSuite("http://127.0.0.1:1", []*Run{goldenRun()}), &Suite{}},
	} {
		js, err := tc.doc.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, tc.decoded); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := Marshal(tc.decoded)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(js) {
			t.Errorf("%s: report.json decoded and written again differs:\n%s\nwant\n%s", name, again, js)
		}
	}
}
