package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/mcp"
	"github.com/probehq/probe/probes/web"
)

// Every row of the table is whole, and probe all runs each once, in its
// own order.
func TestTheTable(t *testing.T) {
	seen := map[int]bool{}
	for _, k := range Kinds {
		if k.Name == "" || k.Summary == "" || !strings.HasPrefix(k.Hint, "--") || len(k.Options) == 0 || k.Build == nil {
			t.Errorf("row %+v is not whole", k)
		}
		if seen[k.All] && k.All != 0 {
			t.Errorf("%s: place %d in probe all taken twice", k.Name, k.All)
		}
		seen[k.All] = true
		ml, err := Named(k.Name, BuildOptions{})
		if err != nil || ml.Name() != k.Name {
			t.Errorf("%s: %v %v", k.Name, ml, err)
		}
	}
	if got := All(); !slices.Equal(got, []string{"toolslist", "sitemap", "page", "feed", "search", "notequery"}) {
		t.Errorf("probe all runs %v", got)
	}
	if got := Names(); !slices.Equal(got, []string{"toolslist", "sitemap", "search", "notequery", "feed", "page"}) {
		t.Errorf("names %v", got)
	}
	if _, ok := Lookup("http"); ok {
		t.Error("http is no named microload")
	}
}

// A file's entry of each use takes exactly the options of its row.
func TestUseTakesTheRowsOptions(t *testing.T) {
	for _, k := range Kinds {
		for _, o := range k.Options {
			str, list := (&Microload{}).Field(o.Key)
			if (str == nil) == (list == nil) || (list != nil) != o.Repeat || o.Flag == "" || o.Usage == "" {
				t.Errorf("%s: option %+v has no field of its kind", k.Name, o)
			}
			opt := o.Key
			src := `{"microloads": [{"use": "` + k.Name + `", "` + opt + `": "/x"}]}`
			if opt == "params" {
				src = `{"microloads": [{"use": "` + k.Name + `", "params": {"q": ["a"]}}]}`
			}
			if _, err := Parse("f.json", []byte(src)); err != nil {
				t.Errorf("%s takes %s: %v", k.Name, opt, err)
			}
		}
		if _, err := Parse("f.json", []byte(`{"microloads": [{"use": "`+k.Name+`", "checks": {}}]}`)); err == nil {
			t.Errorf("%s took checks", k.Name)
		}
	}
}

func TestBuild(t *testing.T) {
	p, err := Parse("f.json", []byte(designExample))
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]probes.Microload{}
	for i := range p.Microloads {
		ml, err := p.Microloads[i].Build(BuildOptions{})
		if err != nil {
			t.Fatalf("%s: %v", p.Microloads[i].Name, err)
		}
		built[ml.Name()] = ml
	}
	if len(built) != 8 {
		t.Errorf("built %v", built)
	}
	if s, ok := built["search"].(*web.Search); !ok || s.Path != "/find" || s.Param != "term" {
		t.Errorf("search %#v", built["search"])
	}
	if r, ok := built["mcp"].(renamed); !ok || r.Microload.(*mcp.ToolsList).Path != "/rpc/mcp" {
		t.Errorf("mcp %#v", built["mcp"])
	}
	if q, ok := built["query"].(renamed).Microload.(*web.NoteQuery); !ok || q.Path != "/query" || len(q.Queries) != 1 || string(q.Queries[0].Body) != `{"q": "gzip"}` {
		t.Errorf("query %#v", built["query"])
	}
	h, ok := built["items"].(*probes.HTTP)
	if !ok || h.Label != "items" || h.Path != "/api/items" || h.Check == nil {
		t.Fatalf("items %#v", built["items"])
	}
	// Each Build is a copy: one run does not change the next.
	h.Path = "/changed"
	again, _ := p.Microloads[7].Build(BuildOptions{})
	if again.(*probes.HTTP).Path != "/api/items" {
		t.Error("Build shares its request")
	}
	if c := h.Check(&probes.Reply{Status: 200, Body: []byte(`{"items": [{"id": 1}]}`)}); c != nil {
		t.Errorf("a good reply failed: %v", c)
	}
	if c := h.Check(&probes.Reply{Status: 200, Body: []byte(`{"items": []}`)}); c == nil || !strings.Contains(c.Error(), "items[0].id") {
		t.Errorf("a reply without the path: %v", c)
	}
	if c := h.Check(&probes.Reply{Status: 500, Header: func(string) string { return "" }}); c == nil || !strings.Contains(c.Error(),
		"status 500") {
		t.Errorf("a 500: %v", c)
	}
}

func TestChecks(t *testing.T) {
	p, err := Parse("f.json", []byte(`{"microloads": [{"name": "x", "path": "/", "checks": {"contentType": "text/html", `+
		`"contains": ["ok"], "notContains": "panic"}}, {"name": "y", "path": "/"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ml, _ := p.Microloads[0].Build(BuildOptions{})
	check := ml.(*probes.HTTP).Check
	html := func(body string) *probes.Reply {
		return &probes.Reply{Status: 200, Body: []byte(body), Header: func(string) string { return "text/html; charset=utf-8" }}
	}
	for _, tc := range []struct {
		r    *probes.Reply
		want string
	}{
		{html("all ok"), ""},
		{html("nothing"), `does not hold "ok"`},
		{html("ok, then a panic"), `holds "panic"`},
		{&probes.Reply{Status: 200, Body: []byte("ok"), Header: func(string) string { return "" }}, "content type"},
		{&probes.Reply{Status: 404, Header: func(string) string { return "" }}, "status 404"},
	} {
		err := check(tc.r)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.r.Body, err, tc.want)
		}
	}
	plain, _ := p.Microloads[1].Build(BuildOptions{})
	if plain.(*probes.HTTP).Check != nil {
		t.Error("a request without checks got some")
	}
}

func TestBuildNamedErrors(t *testing.T) {
	fixture := BuildOptions{NoteQueries: &web.NoteQuery{Path: "/query", Queries: []web.Query{{Name: "a"}}}}
	for _, tc := range []struct {
		m    Microload
		o    BuildOptions
		want string
	}{
		{Microload{Use: "feed", Feeds: Values{"javascript:alert(1)"}}, BuildOptions{}, "--feed "},
		{Microload{Use: "notequery", Path: "query", Method: "POST", Bodies: Values{"{}"}}, BuildOptions{}, `--path "query" must start with /`},
		{Microload{Use: "notequery", Path: "/q", Method: "GET"}, BuildOptions{}, "notequery --method GET: give --param"},
		{Microload{Use: "notequery", Path: "/q", Method: "GET", Param: "novalues"}, BuildOptions{}, "--param "},
		{Microload{Use: "notequery", Path: "/q", Method: "POST"}, BuildOptions{}, "give the queries with --body"},
		{Microload{Use: "notequery", Path: "/q", Method: "PUT", Bodies: Values{"{}"}}, BuildOptions{},
			`notequery --method "PUT": want POST or GET`},
		{Microload{Use: "nosuch"}, BuildOptions{}, `unknown microload "nosuch" (toolslist sitemap search notequery feed page http)`},
		{Microload{Name: "mine", Path: "/x"}, fixture, "a request of its own is read from a target file"},
	} {
		if _, err := tc.m.Build(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.m, err, tc.want)
		}
	}
	// The fixture's queries when none are given, and only then.
	ml, err := Named("notequery", fixture)
	if q, ok := ml.(*web.NoteQuery); err != nil || !ok || q.Path != "/query" || len(q.Queries) != 1 {
		t.Errorf("fixture notequery: %#v %v", ml, err)
	}
	known := BuildOptions{KnownNoteQueries: map[string][]web.Query{"urn:x": {{Name: "k"}}}}
	if ml, err := Named("notequery", known); err != nil || ml.(*web.NoteQuery).Path != "" ||
		len(ml.(*web.NoteQuery).Known["urn:x"]) != 1 {
		t.Errorf("notequery elsewhere: %#v %v", ml, err)
	}
	// Bodies without --path go to the endpoint the site announces.
	bodies := Microload{Use: "notequery", Method: "POST", Bodies: Values{`{"a":1}`, `{"a":2}`}}
	ml, err = bodies.Build(known)
	if q, ok := ml.(*web.NoteQuery); err != nil || !ok || q.Path != "" || len(q.Queries) != 2 || string(q.Queries[1].Body) != `{"a":2}` {
		t.Errorf("notequery --body without --path: %#v %v", ml, err)
	}
	// The fixture's microload is a copy: discovery's Prepare fills in its own.
	ml, _ = Named("notequery", fixture)
	ml.(*web.NoteQuery).Path = "/changed"
	if fixture.NoteQueries.Path != "/query" {
		t.Error("building the fixture's notequery shares its NoteQuery")
	}
	get := Microload{Use: "notequery", Path: "/q", Method: "get", Param: "tag=go,travel"}
	ml, err = get.Build(fixture)
	if q, ok := ml.(*web.NoteQuery); err != nil || !ok || len(q.Queries) != 2 || q.Queries[1].RawQuery != "tag=travel" {
		t.Errorf("GET notequery: %#v %v", ml, err)
	}
	feed := Microload{Use: "feed", Feeds: Values{"http://example.com/a.xml?x=1", "/b.xml"}}
	ml, err = feed.Build(BuildOptions{})
	if f, ok := ml.(*web.Feed); err != nil || !ok || !slices.Equal(f.Feeds, []string{"/a.xml?x=1", "/b.xml"}) {
		t.Errorf("feeds: %#v %v", ml, err)
	}
}
