package pipeline

import (
	"regexp"
	"strings"
	"testing"
)

// DrawFlame draws the profile's own frames, titled by its file and sample
// type, as SVG or HTML; a focus that matches nothing leaves them out, and
// an unknown sample type or a missing base is an error.
func TestDrawFlame(t *testing.T) {
	path := writeProfile(t, synthetic("cpu", "nanoseconds"))
	for _, svg := range []bool{true, false} {
		b, err := DrawFlame(FlameOptions{Profile: path, MaxProfile: 1 << 20, SVG: svg})
		if err != nil || !strings.Contains(string(b), "main.handle") || !strings.Contains(string(b), path+" (cpu)") {
			t.Errorf("svg %v: %v, %.200q", svg, err, b)
		}
		if strings.Contains(string(b), "<html") == svg {
			t.Errorf("svg %v: %.100q", svg, b)
		}
	}
	b, err := DrawFlame(FlameOptions{Profile: path, MaxProfile: 1 << 20, SVG: true, Focus: regexp.MustCompile("^nothing$")})
	if err != nil || strings.Contains(string(b), "main.handle") {
		t.Errorf("focus: %v, main.handle drawn", err)
	}
	diff, err := DrawFlame(FlameOptions{Profile: path, Base: path, MaxProfile: 1 << 20, SVG: true})
	if err != nil || !strings.Contains(string(diff), "main.handle") {
		t.Errorf("differential: %v", err)
	}
	if _, err := DrawFlame(FlameOptions{Profile: path, MaxProfile: 1 << 20, SampleIndex: "alloc_space"}); err == nil {
		t.Error("unknown sample type: no error")
	}
	if _, err := DrawFlame(FlameOptions{Profile: path, Base: path + ".missing", MaxProfile: 1 << 20}); err == nil {
		t.Error("missing base: no error")
	}
}

// LoadRules: the catalog alone without a file; a file's rule is added, a
// bad file's error names it.
func TestLoadRules(t *testing.T) {
	catalog, err := LoadRules("", nil)
	if err != nil || len(catalog) == 0 {
		t.Fatalf("catalog: %v, %d rules", err, len(catalog))
	}
	src := `[{"id": "my-cache", "class": "load-time", "what": "building my cache", "frames": ["^my\\.build$"], ` +
		`"suggestion": "build it once"}]`
	rules, err := LoadRules("mine.json", []byte(src))
	if err != nil || len(rules) != len(catalog)+1 || rules[len(rules)-1].ID != "my-cache" {
		t.Errorf("added: %v, %d rules", err, len(rules))
	}
	if _, err := LoadRules("bad.json", []byte("{")); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("bad file: %v", err)
	}
}
