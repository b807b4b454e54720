package verify

import (
	"errors"
	"strings"
	"testing"
)

// rewriteCase is a hot site of a test server and what --verify must make
// of it.
type rewriteCase struct {
	name, server, fn, mark, callee string
	class                          Class
	outer                          *Frame // the caller's frame, for a helper's site
	form                           Form   // empty: not rewritable
	why                            string // part of the reason when not rewritable
	call                           string // the call rewritten begins so, when not the one at the site
}

func rewriteCases(t *testing.T) []rewriteCase {
	schemaOuter := hotFrame(t, "schema", "validate", "schema compile")
	heldOuter := hotFrame(t, "held", "(*server).validate", "held schema")
	heldTrap := hotFrame(t, "held", "(*server).trap", "held trap")
	resolve := "github.com/google/jsonschema-go/jsonschema.(*Schema).Resolve"
	heldGzip := hotFrame(t, "held", "(*server).download", "held gzip")
	return []rewriteCase{
		{name: "rules", server: "rules", fn: "match", mark: "rules", callee: "regexp.MustCompile", class: LoadTime,
			form: MemoRange},
		{name: "page", server: "page", fn: "render", mark: "page", callee: "text/template.(*Template).Parse",
			class: LoadTime, form: Once},
		{name: "schema", server: "schema", fn: "compile", mark: "schema resolve",
			callee: "github.com/google/jsonschema-go/jsonschema.(*Schema).Resolve", class: LoadTime, outer: &schemaOuter,
			form: Once},
		// No constant to hoist: the schema is made from the catalog the
		// server loaded, memoised by it (a pointer held since start).
		{name: "held", server: "held", fn: "schemaOf", mark: "held resolve", callee: resolve, class: LoadTime,
			outer: &heldOuter, form: MemoHeld},
		{name: "held trap", server: "held", fn: "schemaOf", mark: "held resolve", callee: resolve, class: LoadTime,
			outer: &heldTrap, why: "`r` is a parameter of trap"},
		// Called for its effects on a writer it made: its function's call,
		// one frame up, on bytes made from the catalog, keyed by it.
		{name: "held bytes", server: "held", fn: "gzipped", mark: "held gzip write",
			callee: "compress/gzip.(*Writer).Write", class: LoadTime, outer: &heldGzip, form: MemoHeld},
		// The hot call is a method on a template the function parses
		// per call from constants: the parse is what is done once.
		{name: "page execute", server: "page", fn: "render", mark: "page execute",
			callee: "text/template.(*Template).Execute", class: LoadTime, form: Once, call: "template.Must("},
		// The same on the client's own template: nothing to do once.
		{name: "trap execute load-time", server: "traps", fn: "greet", mark: "trap execute",
			callee: "text/template.(*Template).Execute", class: LoadTime, why: "result is dropped"},
		{name: "trap regexp load-time", server: "traps", fn: "grep", mark: "trap regexp", callee: "regexp.Compile",
			class: LoadTime, why: "`r` is a parameter of grep"},
		{name: "trap regexp cacheable", server: "traps", fn: "grep", mark: "trap regexp", callee: "regexp.Compile",
			class: Cacheable, form: MemoArgs},
		{name: "trap template load-time", server: "traps", fn: "greet", mark: "trap template",
			callee: "text/template.(*Template).Parse", class: LoadTime, why: "`text` is computed on each call"},
		{name: "trap template cacheable", server: "traps", fn: "greet", mark: "trap template",
			callee: "text/template.(*Template).Parse", class: Cacheable, form: MemoArgs},
		{name: "trap body", server: "traps", fn: "sum", mark: "trap body", callee: "net/http.(*body).Read",
			class: Cacheable, why: "calls an interface's method"},
		{name: "trap absent callee", server: "traps", fn: "sum", mark: "trap body", callee: "regexp.MustCompile",
			class: Cacheable, why: "no call to regexp.MustCompile"},
		// A held catalog an admin handler grows in place: its address
		// would key stale data.
		{name: "held grown", server: "grown", fn: "(*server).list", mark: "grown marshal", callee: "encoding/json.Marshal",
			class: LoadTime, why: "would key the memo by address, but `c.Items` is written at line"},
		// A result a method of its changes per request (re.Longest()).
		{name: "trap longest", server: "traps", fn: "longest", mark: "trap longest", callee: "regexp.MustCompile",
			class: LoadTime, why: "is changed by `re.Longest()`"},
		// Package values an admin handler changes: a pointer method Go
		// calls with the value's address, a slice handed to copy.
		{name: "trap set", server: "traps", fn: "screen", mark: "trap set", callee: "regexp.MustCompile",
			class: LoadTime, why: "`conf` is assigned at line"},
		{name: "trap copy", server: "traps", fn: "block", mark: "trap copy", callee: "regexp.MustCompile",
			class: LoadTime, why: "`words` is assigned at line"},
		{name: "trap wrong function", server: "traps", fn: "greet", mark: "trap body", callee: "net/http.(*body).Read",
			class: Cacheable, why: "is not in main.greet"},
	}
}

// A parameter of the function that makes a handler, held by the handler
// it returns, is the same on each of the handler's calls: no evidence the
// work is per request. The call on it alone is done once per literal made,
// in the maker; beside the request's input it is per call, and a value
// the handler writes into is never shared.
func TestACapturedParameterIsNoInputOfEachCall(t *testing.T) {
	for _, c := range []struct {
		server, fn, mark, callee string
		perCall                  bool
		why                      string // empty: rewritten once per literal made
	}{
		{"page", "makeList.func1", "captured", "encoding/json.Marshal", false, ""},
		{"traps", "makeFind.func1", "trap maker", "regexp.Compile", true, "`r` is a parameter of a function literal"},
		{"traps", "makeCount.func1", "trap written", "encoding/json.Marshal", true, "`hits` is assigned at line"},
		// Made with a package slice that another handler writes into.
		{"traps", "makeMatch.func1", "trap given", "regexp.MustCompile", false, "`blocked`, given as `pats` at line"},
	} {
		t.Run(c.mark, func(t *testing.T) {
			site := Site{Callee: c.callee, Frames: []Frame{hotFrame(t, c.server, c.fn, c.mark)}}
			v, err := Rewrite("testdata/"+c.server, site, LoadTime)
			var nr *NotRewritable
			switch {
			case c.why == "" && err != nil:
				t.Fatal(err)
			case c.why == "":
				checkOncePerLiteral(t, v)
			case !errors.As(err, &nr):
				t.Fatalf("got %s %s of %s, %v; want not rewritable", v.Class, v.Form, v.Call, err)
			case nr.PerCall() != c.perCall || !strings.Contains(nr.Why, c.why):
				t.Errorf("per call %v, why %q; want per call %v, a why saying %q", nr.PerCall(), nr.Why, c.perCall, c.why)
			}
		})
	}
}

// checkOncePerLiteral: the variant computes the call in the maker, before
// the literal, and the literal reads what it computed.
func checkOncePerLiteral(t *testing.T, v *Variant) {
	t.Helper()
	src := string(v.Rewritten)
	made := strings.Index(src, "probeMade1, probeMade1b := json.Marshal(items)")
	ret := strings.Index(src, "return func(w http.ResponseWriter")
	use := strings.Index(src, "b, _ := probeMade1, probeMade1b")
	if v.Form != OncePerLiteral || made < 0 || ret < made || use < ret {
		t.Errorf("form %s, want %s; the call made at %d, the literal at %d, read at %d:\n%s", v.Form, OncePerLiteral,
			made, ret, use, src)
	}
}

func (c rewriteCase) site(t *testing.T) Site {
	s := Site{Callee: c.callee, Frames: []Frame{hotFrame(t, c.server, c.fn, c.mark)}}
	if c.outer != nil {
		s.Frames = append(s.Frames, *c.outer)
	}
	return s
}

func TestRewriteDecidesEachHotSite(t *testing.T) {
	for _, c := range rewriteCases(t) {
		t.Run(c.name, func(t *testing.T) {
			v, err := Rewrite("testdata/"+c.server, c.site(t), c.class)
			var nr *NotRewritable
			switch {
			case c.form == "" && errors.As(err, &nr):
				if !strings.Contains(nr.Why, c.why) {
					t.Errorf("why = %q, want it to say %q", nr.Why, c.why)
				}
				return
			case c.form == "":
				t.Fatalf("got %s %s of %s, %v; want not rewritable", v.Class, v.Form, v.Call, err)
			case err != nil:
				t.Fatal(err)
			}
			if v.Form != c.form {
				t.Errorf("form = %s, want %s", v.Form, c.form)
			}
			if c.call != "" && (!strings.HasPrefix(v.Call, c.call) || !strings.HasPrefix(v.ReceiverOf, "t.Execute(")) {
				t.Errorf("rewrote %s for %q, want %s… for the hot call", v.Call, v.ReceiverOf, c.call)
			}
			patch, err := v.Patch()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s\n%s", v.Call, patch)
		})
	}
}
