package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/probehq/probe/probes"
)

// parseAndBuildFirst parses a target file and builds its first entry; an
// error of either stops the test.
func parseAndBuildFirst(t *testing.T, src string) (*Plan, probes.Microload) {
	t.Helper()
	p, err := Parse("f.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ml, err := p.Microloads[0].Build(BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p, ml
}

// designExample is docs/DESIGN.md's target file, as JSON.
const designExample = `{
  "target": "http://127.0.0.1:8080",
  "pprof": "http://127.0.0.1:6060/debug/pprof/",
  "headers": {"Authorization": "Bearer k"},
  "microloads": [
    {"name": "sitemap", "use": "sitemap", "path": "/sitemap.xml"},
    {"name": "page", "use": "page", "sitemap": "/sitemap.xml"},
    {"name": "feed", "use": "feed", "feeds": ["/feed.xml"], "sitemap": "/sitemap.xml"},
    {"name": "search", "use": "search", "path": "/find", "queryParam": "term"},
    {"name": "mcp", "use": "toolslist", "path": "/rpc/mcp"},
    {"name": "query", "use": "notequery", "path": "/query", "bodies": ["{\"q\": \"gzip\"}"], "method": "POST"},
    {"name": "notes", "path": "{page}", "params": {"page": {"sitemap": "/notes/"}},
      "checks": {"status": 200, "contentType": "text/html", "contains": ["</html>"], "notContains": ["panic"]}},
    {"name": "items", "path": "/api/items", "params": {"page": {"range": [1, 20]}, "sort": ["date", "title"]},
      "checks": {"status": [200, 304], "json": "items[0].id"}}
  ]
}`

const scenarioExample = `{
  "scenarios": [
    {"name": "buy", "values": {"user": ["ann", "bob"]},
     "steps": [
       {"name": "login", "method": "post", "path": "/login", "body": "{\"user\": \"{{user}}\"}",
        "checks": {"status": 200}, "extract": {"token": {"json": "token"}}},
       {"name": "list", "path": "/items", "headers": {"Authorization": "Bearer {{token}}"},
        "extract": {"id": {"json": "items[0].id"}, "etag": {"header": "ETag"}}},
       {"path": "/items/{{id}}", "extract": {"csrf": {"regexp": "name=\"csrf\" value=\"([^\"]+)\""}}}
     ]}
  ],
  "microloads": [{"use": "search"}],
  "mix": {"buy": 1, "search": 3}
}`

func TestParseFillsTheModel(t *testing.T) {
	p, err := Parse("probe.json", []byte(designExample))
	if err != nil {
		t.Fatal(err)
	}
	if p.File != "probe.json" || p.Target != "http://127.0.0.1:8080" || p.Pprof != "http://127.0.0.1:6060/debug/pprof/" {
		t.Errorf("plan %+v", p)
	}
	if p.Headers["Authorization"] != "Bearer k" || len(p.Header) != 1 || p.Header[0].Name != "Authorization" {
		t.Errorf("headers %v %v", p.Headers, p.Header)
	}
	if len(p.Microloads) != 8 {
		t.Fatalf("%d microloads", len(p.Microloads))
	}
	search, query, notes, items := p.Microloads[3], p.Microloads[5], p.Microloads[6], p.Microloads[7]
	if search.Use != "search" || search.Path != "/find" || search.QueryParam != "term" {
		t.Errorf("search %+v", search)
	}
	if query.Method != "POST" || !slices.Equal(query.Bodies, Values{`{"q": "gzip"}`}) {
		t.Errorf("query %+v", query)
	}
	if p.Microloads[2].Feeds[0] != "/feed.xml" || p.Microloads[0].Path != "/sitemap.xml" {
		t.Errorf("feed %+v, sitemap %+v", p.Microloads[2], p.Microloads[0])
	}
	// An option left out takes its default, as its flag does.
	d, err := Parse("d.json", []byte(`{"microloads": [{"use": "search"}, {"use": "notequery", "path": "/q", "bodies": "{}"}]}`))
	if err != nil || d.Microloads[0].QueryParam != "q" || d.Microloads[1].Method != "POST" || d.Microloads[1].Bodies[0] != "{}" {
		t.Errorf("defaults: %+v %v", d, err)
	}
	if notes.Use != "" || notes.Method != "GET" || notes.Path != "{page}" || len(notes.Params) != 1 || !notes.Params[0].FromSitemap || notes.Params[0].Prefix != "/notes/" {
		t.Errorf("notes %+v", notes)
	}
	if c := notes.Checks; c == nil || !slices.Equal(c.Status,
		Statuses{200}) || c.ContentType != "text/html" || c.Contains[0] != "</html>" || c.NotContains[0] != "panic" {
		t.Errorf("notes checks %+v", notes.Checks)
	}
	if len(items.Params) != 2 || items.Params[0].Name != "page" || len(items.Params[0].Values) != 20 || items.Params[1].Values[1] != "title" {
		t.Errorf("items params %+v", items.Params)
	}
	if !slices.Equal(items.Checks.Status, Statuses{200, 304}) || items.Checks.JSON != "items[0].id" {
		t.Errorf("items checks %+v", items.Checks)
	}
}

func TestParseScenarios(t *testing.T) {
	p, err := Parse("probe.json", []byte(scenarioExample))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Scenarios) != 1 || p.Mix["search"] != 3 || p.Mix["buy"] != 1 {
		t.Fatalf("%+v", p)
	}
	sc := p.Scenarios[0]
	if sc.Name != "buy" || sc.Probe == nil || sc.Probe.Name != "buy" || len(sc.Steps) != 3 || len(sc.Probe.Steps) != 3 {
		t.Fatalf("scenario %+v", sc)
	}
	if !slices.Equal(sc.Values["user"], Values{"ann", "bob"}) {
		t.Errorf("values %v", sc.Values)
	}
	login, list, third := sc.Steps[0], sc.Steps[1], sc.Steps[2]
	if login.Method != "POST" || login.Extract["token"].JSON != "token" || !slices.Equal(login.Checks.Status, Statuses{200}) {
		t.Errorf("login %+v", login)
	}
	if list.Headers["Authorization"] != "Bearer {{token}}" || list.Extract["etag"].Header != "ETag" || list.Method != "GET" {
		t.Errorf("list %+v", list)
	}
	if third.Name != "step3" || third.Extract["csrf"].Regexp != `name="csrf" value="([^"]+)"` {
		t.Errorf("third %+v", third)
	}
}

// Each error is one line that names its place.
func TestParseErrorsNameThePlace(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{"microloads": [{"name": "x", "path": "/", "checks": {"stauts": 200}}]}`, `f.json: microloads[0].checks: unknown key ` +
			`"stauts" (want status, contentType, contains, notContains, json)`},
		{`{"microloads": [{"name": "x", "use": "serach"}]}`, `f.json: microloads[0].use: "serach" is no microload (want ` +
			`toolslist, sitemap, search, notequery, feed or page)`},
		{`{"microloads": [{"use": "sitemap", "feeds": ["/a"]}]}`, `f.json: microloads[0]: unknown key "feeds" (want name, use, path)`},
		{`{"microloads": [{"name": "x", "path": "x"}]}`, `microloads[0].path: want a path that starts with /`},
		{`{"microloads": [{"name": "x", "path": "/", "params": {"n": {"range": [5, 1]}}}]}`,
			"f.json: microloads[0].params.n.range: want [from, to]"},
		{`{"microloads": [{"name": "x", "path": "/", "params": {"n": {"sitemap": false}}}]}`, "microloads[0].params.n.sitemap: " +
			"want true or a path prefix"},
		{`{"microloads": [{"name": "x", "path": "/", "params": {"n": []}}]}`, "microloads[0].params.n: no values"},
		{`{"microloads": [{"name": "x", "path": "/", "checks": {"status": 99}}]}`, `microloads[0].checks.status: want ` +
			`HTTP statuses, got "99"`},
		{`{"microloads": [{"name": "x", "path": "/", "checks": {"json": "a[x"}}]}`, "microloads[0].checks.json:"},
		{`{"microloads": [{"name": "x", "path": "/", "headers": {"A": 1}}]}`, "microloads[0].headers.A: want a string"},
		{`{"microloads": [{"name": "a b", "path": "/"}]}`, "microloads[0].name: want a name without spaces or slashes"},
		{`{"microloads": [{"use": "page"}, {"use": "page"}]}`, `microloads[1].name: "page" names two microloads`},
		{`{"microloads": [{"use": "notequery", "params": {"a": [1], "b": [2]}}]}`, "microloads[0].params: notequery takes one " +
			"parameter with values"},
		{`{"microloads": []}`, "f.json: microloads: want a list of at least one microload"},
		{`{}`, "microloads: want a list of at least one microload"},
		{`{"target": 1, "microloads": [{"use": "page"}]}`, "f.json: target: want a string, got a number"},
		{`{"targte": "x"}`, `f.json: unknown key "targte"`},
		{`[]`, "f.json: want an object, got a list"},
		{`{"microloads": [ }`, "f.json:1:19: invalid character '}'"},
		{`{"microloads": [ `, "f.json: unexpected EOF"},
		{"{\n  \"microloads\": [1,,]}", "f.json:2:"},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a", "extract": {"x": {"xpath": "//a"}}}]}]}`,
			`scenarios[0].steps[0].extract.x: unknown key "xpath"`},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a"}]}], "mix": {"t": 1}}`, `mix.t: no scenario or microload of ` +
			`the file is named "t"`},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a"}]}], "mix": {"s": 0}}`, "mix.s: want a weight above 0"},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a", "extract": {"x": {"regexp": "("}}}]}]}`, "want a regexp"},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/a", "extract": {"x": {"json": "a", "header": "b"}}}]}]}`,
			"want one of json, header or regexp"},
		{`{"scenarios": []}`, "want a list of at least one scenario"},
		{`{"scenarios": [{"name": "s", "steps": []}]}`, "scenarios[0].steps: want a list of at least one step"},
		{`{"scenarios": [{"name": "s", "steps": [{"path": "/{{id}}"}]}]}`, "scenarios[0]: scenario s: step step1 uses {{id}}"},
		{`{"scenarios": [{"name": "page", "steps": [{"path": "/"}]}], "microloads": [{"use": "page"}]}`,
			`scenarios[0].name: "page" names two microloads or scenarios`},
	} {
		_, err := Parse("f.json", []byte(tc.src))
		if err == nil {
			t.Errorf("%s: no error", tc.src)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s:\n  got  %v\n  want %s", tc.src, err, tc.want)
		}
	}
}

func TestReadEvaluatesJsonnetThroughTheOptions(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "probe.jsonnet")
	os.WriteFile(js, []byte("{ microloads: [{ use: 'page' }] }"), 0o644)
	if _, err := Read(context.Background(), js, Options{}); err == nil || !strings.Contains(err.Error(), "no Jsonnet evaluator") {
		t.Errorf("no evaluator: %v", err)
	}
	var asked string
	eval := func(_ context.Context, path string) ([]byte, error) {
		asked = path
		return []byte(`{"microloads": [{"use": "page"}]}`), nil
	}
	p, err := Read(context.Background(), js, Options{Jsonnet: eval})
	if err != nil || asked != js || p.File != js || p.Microloads[0].Name != "page" {
		t.Errorf("evaluated: %+v %v (asked %q)", p, err, asked)
	}
	failing := func(context.Context, string) ([]byte, error) {
		return nil, errors.New("probe.jsonnet: the evaluation died")
	}
	if _, err := Read(context.Background(), js, Options{Jsonnet: failing}); err == nil || err.Error() != "probe.jsonnet: the evaluation died" {
		t.Errorf("the evaluator's error: %v", err)
	}
	plain := filepath.Join(dir, "probe.json")
	os.WriteFile(plain, []byte(`{"microloads": [{"use": "feed"}]}`), 0o644)
	if p, err := Read(context.Background(), plain, Options{Jsonnet: failing}); err != nil || p.Microloads[0].Use != "feed" {
		t.Errorf("JSON is read as it is: %+v %v", p, err)
	}
	if _, err := Read(context.Background(), filepath.Join(dir, "none.json"), Options{}); err == nil {
		t.Error("a missing file read")
	}
	if !IsJsonnet("a.libsonnet") || IsJsonnet("a.json") || IsJsonnet("jsonnet") {
		t.Error("IsJsonnet")
	}
}
