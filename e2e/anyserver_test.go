package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/report"
)

// otherSite is a server of its own shape, nothing like the fixture's:
// robots.txt names a sitemap index under another public host, pages carry
// an Atom feed and an HTML search form, the MCP endpoint is where
// /.well-known/mcp.json says, and there is no /mcp, /sitemap.xml or /search.
type otherSite struct {
	*httptest.Server
	mu      sync.Mutex
	agents  map[string]int
	accepts map[string]int
}

var articleWords = []string{"harbour", "lantern", "meadow", "quarry", "saffron", "thimble", "walnut", "zephyr", "orchard", "pebble"}

func article(n int) string {
	return fmt.Sprintf("Article %d tells of the %s and the %s near the %s.", n, articleWords[n%10], articleWords[(n+3)%10],
		articleWords[(n+7)%10])
}

func newOtherSite(t *testing.T) *otherSite {
	s := &otherSite{agents: map[string]int{}, accepts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/evil", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request smuggled from the sitemap reached the server")
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /private\nSitemap: https://public.example/maps/index.xml\n")
	})
	mux.HandleFunc("/maps/index.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://public.example/maps/a.xml</loc></sitemap><sitemap><loc>https://public.example/maps/b.xml</loc></sitemap></sitemapindex>`)
	})
	urlset := func(from, to int, extra ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			var b strings.Builder
			b.WriteString(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for n := from; n <= to; n++ {
				fmt.Fprintf(&b, "<url><loc>https://public.example/articles/%d.html</loc></url>", n)
			}
			for _, e := range extra {
				fmt.Fprintf(&b, "<url><loc>%s</loc></url>", e)
			}
			b.WriteString("</urlset>")
			io.WriteString(w, b.String())
		}
	}
	mux.HandleFunc("/maps/a.xml", urlset(1, 10, "https://elsewhere.example/stolen.html"))
	// A page with a space, and a hostile one: a raw CR LF and a request
	// line in its <loc>, which must never reach the wire.
	mux.HandleFunc("/maps/b.xml", urlset(11, 20, "https://public.example/articles/a%20b.html",
		"https://public.example/articles/x&#13;&#10;GET /evil HTTP/1.1"))
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html><head><title>Other</title>
<link rel="alternate" type="application/atom+xml" title="Articles" href="/atom.xml"></head>
<body><form action="/find" method="get"><input type="search" name="term"><input type="submit" value="Find"></form>
<main>%s</main></body></html>`, body)
	}
	mux.HandleFunc("/articles/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/articles/"), "%d.html", &n); err != nil && r.URL.Path != "/articles/a b.html" {
			http.NotFound(w, r)
			return
		}
		page(w, "<p>"+article(n)+"</p>")
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) { page(w, "<p>Welcome.</p>") })
	mux.HandleFunc("/atom.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Articles</title>`)
		for n := 1; n <= 20; n++ {
			fmt.Fprintf(&b, "<entry><title>Article %d</title><summary>%s</summary></entry>", n, article(n))
		}
		b.WriteString("</feed>")
		io.WriteString(w, b.String())
	})
	mux.HandleFunc("/find", func(w http.ResponseWriter, r *http.Request) {
		term := strings.ToLower(r.URL.Query().Get("term"))
		var hits []string
		for n := 1; n <= 20; n++ {
			for _, word := range strings.Fields(term) {
				if strings.Contains(strings.ToLower(article(n)), word) {
					hits = append(hits, "<li>"+article(n)+"</li>")
					break
				}
			}
		}
		page(w, fmt.Sprintf(`<h1>Results for %s</h1><ul>%s</ul>`, term, strings.Join(hits, "")))
	})
	mux.HandleFunc("/.well-known/mcp.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name": "other", "transport": {"type": "streamable-http", "endpoint": "/rpc/mcp"}}`)
	})
	mux.HandleFunc("/rpc/mcp", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if r.Method != "POST" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"other","version":"1"}}`
		case "notifications/initialized":
			w.WriteHeader(202)
			return
		case "tools/list":
			result = `{"tools":[{"name":"find","description":"find ` +
				`articles","inputSchema":{"type":"object","properties":{"term":{"type":"string"}}}}]}`
		default:
			http.Error(w, "unknown method", 400)
			return
		}
		id, _ := json.Marshal(req.ID)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.agents[r.Header.Get("User-Agent")]++
		s.accepts[r.Header.Get("Accept-Encoding")]++
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

var quick = []string{"--duration", "300ms", "--warmup", "0s", "--concurrency", "2"}

// anyReport is report.json of one run, or of probe all: a run's fields,
// and the suite's runs and skipped microloads.
type anyReport struct {
	report.Run
	Runs    []*report.Run    `json:"runs"`
	Skipped []report.Skipped `json:"skipped"`
}

func runJSON(t *testing.T, args ...string) (int, anyReport, string) {
	t.Helper()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), append(append(args, quick...), "--json", "--out", t.TempDir())...)
	var rep anyReport
	if stdout != "" {
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%v: stdout is not report.json: %v\n%.300s", args, err, stdout)
		}
	}
	return code, rep, stderr
}

// Each named microload finds its way on a site shaped like none of
// probe's, or says in one line what it needs.
func TestMicroloadsFindTheirWay(t *testing.T) {
	s := newOtherSite(t)
	for _, tc := range []struct{ name, op string }{
		{"sitemap", "GET /maps/index.xml"},
		{"page", "GET page"},
		{"feed", "GET /atom.xml"},
		{"search", "GET /find"},
		{"toolslist", "tools/list"},
	} {
		code, rep, stderr := runJSON(t, tc.name, "--target", s.URL)
		ops := ""
		for _, o := range rep.Operations {
			ops += o.Op + " "
		}
		if code != exitOK || rep.Latency.Requests == 0 || rep.Latency.Errors != 0 || !strings.Contains(ops, tc.op) {
			t.Errorf("%s: exit %d, %d requests, %d errors %v, ops %s\n%s", tc.name, code, rep.Latency.Requests, rep.Latency.Errors,
				rep.Errors, ops, stderr)
		}
	}
	// The sitemap's page with a space went out escaped; the one with CR LF
	// and the one of another host did not go out at all.
	code, rep, _ := runJSON(t, "page", "--target", s.URL)
	if code != exitOK || rep.Latency.Errors != 0 {
		t.Errorf("pages: exit %d, errors %v", code, rep.Errors)
	}
	code, _, stderr := runJSON(t, "notequery", "--target", s.URL)
	if code != exitError {
		t.Errorf("notequery: exit %d", code)
	}
	clitest.OneLine(t, stderr, "notequery: no query endpoint is known for this server; point it there with --path /query --body")
	code, _, stderr = runJSON(t, "search", "--target", s.URL, "--path", "/nowhere")
	if code != exitError || !strings.Contains(stderr, "status 404") {
		t.Errorf("search at a wrong --path: exit %d, %s", code, stderr)
	}
	// Requests look like a real client's.
	s.mu.Lock()
	gzipped, agents := s.accepts["gzip"], s.agents
	s.mu.Unlock()
	if gzipped == 0 || agents["probe/1 (load test)"] == 0 {
		t.Errorf("Accept-Encoding %v, User-Agent %v", s.accepts, agents)
	}
}

func TestAcceptEncodingIsSaid(t *testing.T) {
	s := newOtherSite(t)
	_, rep, _ := runJSON(t, "http", "--target", s.URL, "--path", "/atom.xml")
	if rep.AcceptEncoding != "gzip" {
		t.Errorf("default accept_encoding %q", rep.AcceptEncoding)
	}
	_, rep, _ = runJSON(t, "http", "--target", s.URL, "--path", "/atom.xml", "--header", "Accept-Encoding: identity")
	if rep.AcceptEncoding != "identity" {
		t.Errorf("accept_encoding %q with --header Accept-Encoding:identity", rep.AcceptEncoding)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accepts["identity"] == 0 {
		t.Errorf("the server saw %v", s.accepts)
	}
}

// probe all --target runs what it finds, names what it skips, and writes
// the report either way.
func TestAllOnAnyServer(t *testing.T) {
	s := newOtherSite(t)
	code, rep, stderr := runJSON(t, "all", "--target", s.URL)
	if code != exitOK || len(rep.Runs) != 5 || len(rep.Skipped) != 1 || rep.Skipped[0].Microload != "notequery" {
		t.Fatalf("exit %d, %d runs, skipped %+v\n%s", code, len(rep.Runs), rep.Skipped, stderr)
	}
	// A target that answers nothing: every microload skipped, the report
	// written, exit 1.
	dead := httptest.NewServer(http.NotFoundHandler())
	defer dead.Close()
	out := t.TempDir()
	code, _, stderr = probeCmd.Run(t, context.Background(), append([]string{"all", "--target", dead.URL, "--out", out}, quick...)...)
	if code != exitError || !strings.Contains(stderr, "nothing could be measured") {
		t.Errorf("a target with nothing to find: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Error(err)
	}
}

// probe init writes what discovery found; probe all --file runs it; a
// broken file is one line.
func TestInitThenRunTheFile(t *testing.T) {
	s := newOtherSite(t)
	file := filepath.Join(t.TempDir(), "probe.jsonnet")
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "init", "--target", s.URL, "--out", file)
	if code != exitOK || !strings.Contains(stdout, "5 microloads found") {
		t.Fatalf("init: exit %d: %s %s", code, stdout, stderr)
	}
	src, _ := os.ReadFile(file)
	for _, want := range []string{"use: 'search', path: '/find', queryParam: 'term'", "path: '/rpc/mcp'", "feeds: ['/atom.xml']",
		"// { name: 'query', use: 'notequery'"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("the file lacks %q:\n%s", want, src)
		}
	}
	// Add a request of its own, with values and checks.
	custom := strings.Replace(string(src), "  ],\n}", `    { name: 'articles', path: '{page}', params: { page: { sitemap: '/articles/' } },
      checks: { status: 200, contentType: 'text/html', contains: ['Article'], notContains: ['panic'] } },
    { name: 'finds', path: '/find', params: { term: ['harbour', 'walnut'] }, checks: { contains: ['Results for'] } },
  ],
}`, 1)
	os.WriteFile(file, []byte(custom), 0o644)
	code, rep, stderr := runJSON(t, "all", "--file", file)
	if code != exitOK || len(rep.Runs) != 7 {
		t.Fatalf("all --file: exit %d, %d runs\n%s\n%s", code, len(rep.Runs), stderr, custom)
	}
	code, rep, stderr = runJSON(t, "articles", "--file", file)
	if code != exitOK || rep.Microload != "articles" || rep.Latency.Requests == 0 {
		t.Errorf("probe articles --file: exit %d %+v\n%s", code, rep, stderr)
	}
	for _, tc := range []struct{ src, want string }{
		{"{ microloads: [ { name: 'x', path: '/', checks: { stauts: 200 } } ] }", "microloads[0].checks: unknown key \"stauts\""},
		{"{ microloads: [ { name: 'x', use: 'serach' } ] }", "microloads[0].use: \"serach\" is no microload"},
		{"{ microloads: [ { name: 'x', path: '{p}' } ] }", "{p}"},
		{"{ microloads: [ { name: 'x', path: '/', params: { n: { range: [5, 1] } } } ] }", "microloads[0].params.n.range"},
		{"{ microloads: [ ", "broken.jsonnet:1:"},
	} {
		broken := filepath.Join(t.TempDir(), "broken.jsonnet")
		os.WriteFile(broken, []byte(tc.src), 0o644)
		code, _, stderr := probeCmd.Run(t, context.Background(),
			append([]string{"all", "--target", s.URL, "--file", broken, "--out", t.TempDir()}, quick...)...)
		if code == exitOK {
			t.Errorf("%s: exit 0", tc.src)
		}
		clitest.OneLine(t, stderr, tc.want)
	}
}

// --fail-on gates a run: one that holds exits 0, one that breaks exits 1
// with a line per breach; an unknown metric is a bad command line.
func TestFailOn(t *testing.T) {
	s := newOtherSite(t)
	code, rep, stderr := runJSON(t, "http", "--target", s.URL, "--path", "/atom.xml", "--fail-on", "p99_ms>100000", "--fail-on", "errors>1%")
	if code != exitOK || len(rep.Thresholds) != 2 || rep.Thresholds[0].Broken {
		t.Errorf("holding thresholds: exit %d %+v\n%s", code, rep.Thresholds, stderr)
	}
	code, rep, stderr = runJSON(t, "http", "--target", s.URL, "--path", "/atom.xml", "--fail-on", "requests<1000000000", "--fail-on", "rps>=0")
	if code != exitError || !rep.Thresholds[0].Broken || strings.Count(stderr, "probe: threshold") != 2 {
		t.Errorf("broken thresholds: exit %d %+v\n%s", code, rep.Thresholds, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"http", "--path", "/", "--fail-on", "p98_ms>1"}, `unknown metric "p98_ms"`},
		{[]string{"http", "--path", "/", "--fail-on", "regressed"}, "is for probe ab and probe compare"},
		{[]string{"http", "--path", "/", "--fail-on", "p99_ms>fast"}, "want METRIC>VALUE"},
	} {
		probeCmd.BadInput(t, append(tc.args, "--target", s.URL), exitUsage, tc.want)
	}
	probeCmd.BadInput(t, []string{"compare", "a", "b", "--fail-on", "p99_ms>1"}, exitUsage, "is for a run's figures")
}
