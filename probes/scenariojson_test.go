package probes

import (
	"encoding/json"
	"strings"
	"testing"
)

// A value from a reply fills a JSON body's hole as a value of the
// document, never as more of its shape: inside a string it is escaped,
// outside one only a number, true, false or null stands.
func TestJSONHolesKeepTheDocumentsShape(t *testing.T) {
	for _, tc := range []struct {
		tmpl, val, want, err string
	}{
		{`{"q": "{{v}}"}`, `a"b\c` + "\n", `{"q": "a\"b\\c\n"}`, ""},
		{`{"q": "x\"{{v}}"}`, `", "admin": true, "`, `{"q": "x\"\", \"admin\": true, \""}`, ""},
		{`{"ids": [{{v}}]}`, `17`, `{"ids": [17]}`, ""},
		{`{"n": {{v}}, "ok": {{v}}}`, `-2.5e3`, `{"n": -2.5e3, "ok": -2.5e3}`, ""},
		{`{"ids": [{{v}}]}`, `1,2,3`, "", "stands outside a JSON string"},
		{`{"n": {{v}}}`, `1, "admin": true`, "", "stands outside a JSON string"},
		{`{"n": {{v}}}`, `"x"`, "", "is not a number, true, false or null"},
		{`{"s": "\\"} {{v}}`, `true`, `{"s": "\\"} true`, ""}, // an escaped backslash ends the string
	} {
		got, err := fillJSON(tc.tmpl, map[string]value{"v": {text: tc.val, from: "the reply of step a"}})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s with %q: %q, %v; want an error saying %q", tc.tmpl, tc.val, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s with %q: %q, %v; want %q", tc.tmpl, tc.val, got, err, tc.want)
		case tc.err == "" && strings.HasPrefix(tc.tmpl, "{\"") && !strings.Contains(tc.tmpl, `\\"}`):
			var doc map[string]any
			if err := json.Unmarshal([]byte(got), &doc); err != nil {
				t.Errorf("%s with %q: %q is not JSON: %v", tc.tmpl, tc.val, got, err)
			}
			if _, ok := doc["admin"]; ok {
				t.Errorf("%s with %q: the value added a key: %s", tc.tmpl, tc.val, got)
			}
		}
	}
}
