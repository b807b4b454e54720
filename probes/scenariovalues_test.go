package probes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A value is bounded: one over 8 KiB fails its session, whether from JSON,
// a header or a regexp.
func TestValuesAreBounded(t *testing.T) {
	long := strings.Repeat("x", maxValue+1)
	s := newWireServer(t, func(path string) (string, string) {
		return "X-Long: " + long + "\r\n", fmt.Sprintf(`{"long": %q, "ok": %q, "obj": [%q]}`, long, long[:maxValue], long)
	})
	for _, tc := range []struct {
		ex   Extract
		want string
	}{
		{Extract{Name: "v", JSON: []any{"long"}}, "extract v: the reply's value is over 8.0 KiB"},
		{Extract{Name: "v", JSON: []any{"obj"}}, "extract v: the reply's value is over 8.0 KiB"},
		{Extract{Name: "v", Header: "X-Long"}, "extract v: the value is over 8.0 KiB"},
		{Extract{Name: "v", Regexp: regexpMust(`"long": "(x+)"`)}, "extract v: the value is over 8.0 KiB"},
	} {
		sc := &Scenario{Name: "s", Steps: []Step{{Name: "a", Method: "GET", Path: "/", Extract: []Extract{tc.ex}}}}
		if err := runOnce(t, s, sc); err == nil || err.Error() != "s/a: "+tc.want {
			t.Errorf("%+v: %v, want %s", tc.ex, err, tc.want)
		}
	}
	sc := &Scenario{Name: "s", Steps: []Step{{Name: "a", Method: "GET", Path: "/", Extract: []Extract{{Name: "v", JSON: []any{"ok"}}}}}}
	if err := runOnce(t, s, sc); err != nil {
		t.Errorf("a value of exactly 8 KiB: %v", err)
	}
}

// The extraction pass itself ends with the run: a large reply is not read
// to its end once the context is done.
func TestExtractionEndsWithTheRun(t *testing.T) {
	doc := bigJSON(8 << 20)
	wants := func() []*jsonWant { return []*jsonWant{{path: []any{"missing"}}, {path: []any{1 << 30}}} }
	start := time.Now()
	if err := scanJSON(context.Background(), doc, wants()); err != nil {
		t.Fatal(err)
	}
	whole := time.Since(start)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	err := scanJSON(ctx, doc, wants())
	// Against the whole pass on the same machine, not a clock bound a
	// busy machine stretches.
	if took := time.Since(start); !errors.Is(err, context.Canceled) || took > max(whole/4, 100*time.Millisecond) {
		t.Errorf("%v after %v (the whole pass %v), want the context's end at once", err, took, whole)
	}
}

// One pass finds all of a step's JSON values and holds nothing the size
// of the reply: what it allocates does not grow with the reply (a tree of
// the document was about 30 times its size).
func TestJSONValuesComeFromOneSmallPass(t *testing.T) {
	doc := bigJSON(8 << 20)
	wants := []*jsonWant{{path: []any{0, "id"}}, {path: []any{50_000, "tags", 2}}, {path: []any{50_000}}, {path: []any{"x"}}}
	// TotalAlloc counts the whole process (an earlier test's goroutines
	// too): the least of three passes is the pass's own.
	least := uint64(math.MaxUint64)
	for range 3 {
		for _, w := range wants {
			*w = jsonWant{path: w.path}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := scanJSON(context.Background(), doc, wants)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	if least > 256<<10 {
		t.Errorf("the pass over %d MB allocated %d KB", len(doc)>>20, least>>10)
	}
	var got []string
	for _, w := range wants {
		v, err := jsonText(w.raw)
		got = append(got, fmt.Sprintln(w.found, v, err))
	}
	want := []string{"true n0 <nil>\n", "true 50000 <nil>\n",
		`true {"id":"n50000","tags":["a","b",50000],"text":"` + strings.Repeat("x", 40) + `"} <nil>` + "\n", "false  has no such value\n"}
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Errorf("got\n%swant\n%s", strings.Join(got, ""), strings.Join(want, ""))
	}
}

// The values as text: as encoding/json gave them, but integers exact.
func TestJSONText(t *testing.T) {
	doc := []byte(`{"s": "a\u0041\n", "i": 12345678901234567890, "f": 1.50, "e": 1e3, "b": true, "n": null,
		"o": {"k": [1, 2]}, "d": 1, "d": 2, "\u0078": "escaped name"}`)
	for _, tc := range []struct {
		path []any
		want string
	}{
		{[]any{"s"}, "aA\n"}, {[]any{"i"}, "12345678901234567890"}, {[]any{"f"}, "1.5"}, {[]any{"e"}, "1000"},
		{[]any{"b"}, "true"}, {[]any{"n"}, "error: has no such value"}, {[]any{"o"}, `{"k":[1,2]}`}, {[]any{"o", "k", 1}, "2"},
		{[]any{"d"}, "1"}, {[]any{"x"}, "escaped name"},
	} {
		w := &jsonWant{path: tc.path}
		if err := scanJSON(context.Background(), doc, []*jsonWant{w}); err != nil {
			t.Fatalf("%v: %v", tc.path, err)
		}
		got, err := jsonText(w.raw)
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.path, got, tc.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a": }`, `nope`, `[1,]`} {
		w := &jsonWant{path: []any{"a"}}
		if err := scanJSON(context.Background(), []byte(bad), []*jsonWant{w}); err == nil || w.found {
			t.Errorf("%q: %v, found %v", bad, err, w.found)
		}
	}
}
