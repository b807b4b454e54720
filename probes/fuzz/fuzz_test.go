package fuzz

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

func TestTemplateEscapesEachHoleForWhereItIs(t *testing.T) {
	tmpl, err := ParseTemplate("", "/q/{str}/x?depth={int}&q={str}", `{"query": "{jsonnet}", "params": {json}}`)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Method != "POST" {
		t.Errorf("method %s: a body means POST", tmpl.Method)
	}
	if got := tmpl.Kinds(); len(got) != 5 || got[0] != Str || got[1] != Int || got[3] != Jsonnet || got[4] != JSON {
		t.Fatalf("kinds %v", got)
	}
	r := tmpl.Request([]string{"a/b c", "-1", "x&y=z", `f("q")` + "\n", `{"a": [1]}`})
	if r.Path != "/q/a%2Fb%20c/x?depth=-1&q=x%26y%3Dz" {
		t.Errorf("path %s", r.Path)
	}
	if string(r.Body) != `{"query": "f(\"q\")\n", "params": {"a": [1]}}` {
		t.Errorf("body %s", r.Body)
	}
}

func TestHolesInHeadersMethodCookieAndJSONFields(t *testing.T) {
	tmpl, err := NewTemplate("{method}", "/x?d={int}", []result.FuzzField{{Name: "X-Region", Value: "eu-{str}"},
		{Name: "Cookie", Value: "a={str}; b=1"}},
		`{"n": {int}, "s": {str}, "q": "{str}", "v": {json}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Place{InMethod, InQuery, InHeader, InCookie, InBodyJSON, InBodyJSON, InBodyString, InBodyJSON}
	if got := tmpl.Places(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("places %v, want %v", got, want)
	}
	r := tmpl.Request([]string{"PROPFIND", "-1", "é\tx", "x y;z", "-9223372036854775809", "a\"b\n", "\\", "[1]"})
	if r.Method != "PROPFIND" || r.Path != "/x?d=-1" {
		t.Errorf("%s %s", r.Method, r.Path)
	}
	if fmt.Sprint(r.Header) != "[{X-Region eu-é\tx} {Cookie a=x%20y%3Bz; b=1}]" {
		t.Errorf("header %q", r.Header)
	}
	body := `{"n": -9223372036854775809, "s": "a\"b\n", "q": "\\", "v": [1]}`
	if string(r.Body) != body || !json.Valid(r.Body) {
		t.Errorf("body %s, want %s", r.Body, body)
	}
	// Every extreme of every hole fills a request the wire can carry, and
	// a JSON body stays JSON.
	for i, h := range tmpl.holes {
		if len(h.extremes) == 0 {
			t.Errorf("hole %d (%s) has no extremes", i, tmpl.HoleName(i))
		}
		for _, e := range h.extremes {
			in := plainInput(0, tmpl)
			in.Values[i] = e
			r := tmpl.Request(in.Values)
			if why := sendable(r); why != "" {
				t.Errorf("%s: extreme %.30q: %s", tmpl.HoleName(i), e, why)
			}
			if nesting(string(r.Body)) < 10000 && !json.Valid(r.Body) { // deeper, encoding/json gives up
				t.Errorf("%s: extreme %.30q makes the body %.80s", tmpl.HoleName(i), e, r.Body)
			}
		}
	}
	for _, bad := range []struct{ method, path, header, want string }{
		{"GET", "/x/{method}", "", "stands only as the whole method"},
		{"{str}", "/x", "", "want a method such as GET"},
		{"GE T", "/x?d={int}", "", "not an HTTP token"},
		{"GET", "/x", "X-{str}", "not names"},
	} {
		var hs []result.FuzzField
		if bad.header != "" {
			hs = []result.FuzzField{{Name: bad.header, Value: "1"}}
		}
		if _, err := NewTemplate(bad.method, bad.path, hs, ""); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %s %s: err %v, want %q", bad.method, bad.path, bad.header, err, bad.want)
		}
	}
}

func TestGeneratedValuesFitTheirPlace(t *testing.T) {
	tmpl, err := NewTemplate("{method}", "/x", []result.FuzzField{{Name: "X-A", Value: "{str}"}, {Name: "X-B", Value: "{jsonnet}"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	g := newGenerators(rand.New(rand.NewPCG(1, 2)), nil)
	for range 500 {
		for _, h := range tmpl.holes {
			if v := g.mutate(h, g.fresh(h)); !Sendable(h.place, v) || len(v) > hugeValue {
				t.Fatalf("%s: %d bytes %.40q", h.place, len(v), v)
			}
		}
	}
}

func TestExtremesComeFirstAndCoverEveryHole(t *testing.T) {
	a, _ := NewTemplate("GET", "/a?n={int}", []result.FuzzField{{Name: "X-Region", Value: "{str}"}}, "")
	b, _ := NewTemplate("{method}", "/b", nil, "")
	ins := extremeInputs([]*Template{a, b})
	// The first round holds each hole's first extreme, the others plain.
	if len(ins) < 3 || ins[0].Values[0] != "0" || ins[0].Values[1] != "a" || ins[1].Values[1] != "" || ins[2].Values[0] != strings.Repeat("M", 1024) {
		t.Fatalf("first inputs %.200s", fmt.Sprint(ins[:3]))
	}
	seen := map[string]bool{}
	for _, in := range ins {
		seen[fmt.Sprint(in.Template, in.Values)] = true
	}
	for _, want := range []string{"0 [-9223372036854775808 a]", "0 [9223372036854775808 a]", "1 [CONNECT]",
		"0 [1 " + strings.Repeat("A", hugeValue) + "]"} {
		if !seen[want] {
			t.Errorf("no extreme input %.60s", want)
		}
	}
}

func TestTemplateWithoutPlaceholdersIsAnError(t *testing.T) {
	for _, tc := range []struct{ path, body, want string }{
		{"/x?depth=1", "", "no placeholder"},
		{"/x?depth={number}", "", "unknown placeholder {number}"},
		{"x?d={int}", "", "must start with /"},
	} {
		if _, err := ParseTemplate("GET", tc.path, tc.body); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.path, err, tc.want)
		}
	}
}

func TestBisectFindsTheThreshold(t *testing.T) {
	for _, tc := range []struct {
		start     string
		threshold int64
	}{{"1000000000000000000", 4409}, {"9223372036854775807", 1}, {"50", 17}, {"-300", 7}, {"-9223372036854775808", 5}} {
		trials := 0
		crashes := func(v string) bool {
			trials++
			n, _ := strconv.ParseInt(v, 10, 64)
			return max(n, -n) >= tc.threshold
		}
		got := bisectInt(tc.start, crashes)
		want := tc.threshold
		if strings.HasPrefix(tc.start, "-") {
			want = -want
		}
		if got != strconv.FormatInt(want, 10) {
			t.Errorf("bisect from %s: %s, want %d", tc.start, got, want)
		}
		if trials > 80 {
			t.Errorf("bisect from %s took %d trials", tc.start, trials)
		}
	}
}

func TestDeltaDebuggingKeepsWhatMatters(t *testing.T) {
	src := `local unused = [1, 2, 3]; local f(n, acc) = if n <= 0 then acc else f(n - 1, acc + 1) tailstrict; [f(100000, 0), "padding"]`
	crashes := func(s string) bool {
		return Parses(s) && strings.Contains(s, "tailstrict") && strings.Contains(s, "100000")
	}
	got := ddminTokens(src, crashes, func() bool { return false })
	if !crashes(got) {
		t.Fatalf("result does not crash: %s", got)
	}
	if len(got) >= len(src)*2/3 || strings.Contains(got, "padding") {
		t.Errorf("not shrunk: %s", got)
	}
}

func TestJsonnetGeneratorMakesProgramsThatParse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := NewJsonnetGen(r, JsonnetCorpus)
	parsed, mutants := 0, 0
	for range 300 {
		p := g.Program()
		if nesting(p) <= maxParseNesting && Parses(p) {
			parsed++
		}
		if m := g.Mutate(p); nesting(m) <= maxParseNesting && Parses(m) {
			mutants++
		}
	}
	// Deep literals are skipped by the check; the rest must parse, and
	// most mutants too (a token deletion breaks syntax on purpose).
	if parsed < 250 || mutants < 200 {
		t.Errorf("%d of 300 programs and %d mutants parse", parsed, mutants)
	}
	for _, s := range JsonnetCorpus {
		sizes := make([]int64, s.holes())
		for i := range sizes {
			sizes[i] = 3
		}
		if !Parses(s.render(sizes)) {
			t.Errorf("seed %s does not parse: %s", s.Name, s.render(sizes))
		}
	}
}

func TestBoundaryValues(t *testing.T) {
	ints := strings.Join(BoundaryInts(), " ")
	for _, want := range []string{" 0 ", " -1 ", " 1024 ", " 1000000000 ", " 10000000000 ", "9223372036854775807", "-9223372036854775808"} {
		if !strings.Contains(" "+ints+" ", want) {
			t.Errorf("boundary ints lack %q", want)
		}
	}
	for _, u := range BoundaryUints() {
		if strings.HasPrefix(u, "-") {
			t.Errorf("negative uint %s", u)
		}
	}
}

func TestCrashFramesOfARecoveredPanic(t *testing.T) {
	w := newPanicWatch()
	w.Write([]byte("2026/11/30 07:00:00 http: panic serving 127.0.0.1:5555: runtime error: index out of range [-1]\ngoroutine 7 " +
		"[running]:\nnet/http.(*conn).serve.func1()\n\t/x.go:1 +0x1\npanic({0x1, 0x2})\n\t/y.go:2\nmain.main.func4({0x0, 0x0}, " +
		"0x0)\n\t/m.go:80 +0x2\nnet/http.HandlerFunc.ServeHTTP(0x1)\n\n"))
	trace, ok := w.take("127.0.0.1:5555")
	if !ok {
		t.Fatal("panic not attributed to the client address")
	}
	out := panicOutcome(trace, 0)
	if out.Class != "panic" || len(out.Frames) == 0 || out.Frames[0] != "main.main.func4" {
		t.Errorf("%+v", out)
	}
	if panicMessage(out.Evidence) != "runtime error: index out of range [-N]" {
		t.Errorf("message %q", panicMessage(out.Evidence))
	}
}

func TestShrinkNestingLowersMatchedBrackets(t *testing.T) {
	src := "std.length(" + strings.Repeat("[", 1500) + "1" + strings.Repeat("]", 1500) + ")"
	crashes := func(s string) bool { return Parses(s) && nesting(s) > 300 }
	got := shrinkNesting(src, crashes)
	if want := "std.length(" + strings.Repeat("[", 300) + "1" + strings.Repeat("]", 300) + ")"; got != want {
		t.Errorf("got %d bytes, nesting %d; want the 300 levels that still crash", len(got), nesting(got))
	}
}

// TestClientSendsTheRequestAsRendered: what the search's client puts on
// the wire is the Request the report and its repro show.
func TestClientSendsTheRequestAsRendered(t *testing.T) {
	type got struct {
		method, target string
		header         http.Header
		body           string
	}
	seen := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- got{r.Method, r.RequestURI, r.Header, string(b)}
	}))
	defer srv.Close()
	tmpl, err := NewTemplate("{method}", "/x/{str}?d={int}", []result.FuzzField{{Name: "X-Region", Value: "{str}"},
		{Name: "Cookie", Value: "a={str}"}}, `{"s": {str}}`)
	if err != nil {
		t.Fatal(err)
	}
	f := &fuzzer{o: Options{Templates: []*Template{tmpl}, Timeout: 5 * time.Second}}
	in := result.FuzzInput{Values: []string{"M-SEARCH", "../a b", "-9223372036854775809", "é\t\xffx", "x;y z", "\x00\"\n"}}
	if _, _, _, _, err := f.send(context.Background(), newHTTPClient(1), &target.Child{URL: srv.URL}, nil, in); err != nil {
		t.Fatal(err)
	}
	r, want := <-seen, tmpl.Request(in.Values)
	if r.method != want.Method || r.target != want.Path || r.body != string(want.Body) {
		t.Errorf("sent %s %s %q, rendered %s %s %q", r.method, r.target, r.body, want.Method, want.Path, want.Body)
	}
	for _, h := range want.Header {
		if v := r.header.Values(h.Name); len(v) != 1 || v[0] != h.Value {
			t.Errorf("header %s: sent %q, rendered %q", h.Name, v, h.Value)
		}
	}
}
