package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/target"
)

// Caddy is a real server nobody here wrote: its templates handler parses
// and executes each reply's template per request, its markdown function
// renders per request, and `encode gzip` compresses each reply, unless a
// precompressed file is served. probe must name that work on its pages,
// with the evidence, and claim nothing on the precompressed file.

const caddyModule = "github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9"

// buildCaddy builds Caddy from the module proxy once per machine (the Go
// build cache keeps it); the test is skipped, with the reason, when it
// cannot be built here.
func buildCaddy(t testing.TB) string {
	t.Helper()
	return buildFromProxy(t, caddyModule, "caddy")
}

// buildFromProxy builds module@version's command bin into a folder of the
// temporary directory named for it, once per machine; the test is
// skipped, with the reason, when it cannot be built here.
func buildFromProxy(t testing.TB, module, bin string) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "probe-"+strings.NewReplacer("/", "-", "@", "-").Replace(module))
	path := filepath.Join(dir, bin)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	cmd := goCommand([]string{"GOBIN=" + dir, "GOFLAGS=-mod=mod"}, "install", module)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("%s cannot be built here (go install %s: %v): %s", bin, module, err, lastLines(string(out), 3))
	}
	return path
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}

// colophon is some 16 KB of the plain HTML a site's pages share.
func colophon() string {
	words := []string{"profiles", "latency", "caddy", "templates", "markdown", "gzip", "servers", "notes", "caching", "requests",
		"reading", "archive"}
	var b strings.Builder
	b.WriteString(`<section class="colophon"><h2>Reading list</h2><ol>`)
	for i := 0; b.Len() < 16<<10; i++ {
		fmt.Fprintf(&b, "<li><a href=\"/read/%d\">On %s and %s, part %d</a> — %s, %s and %s</li>", i, words[i%12], words[(i*5+3)%12], i,
			words[(i*7+1)%12], words[(i*3+2)%12], words[(i*11+5)%12])
	}
	b.WriteString("</ol></section>")
	return b.String()
}

// layout is a note's page as a site would write it for Caddy's templates:
// a head, a navigation, the Markdown, a footer, with the template actions
// such a layout has.
var layout = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Note %d</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/static/app.css"><link rel="alternate" type="application/rss+xml" title="Notes" href="/feed.xml">
{{$path := .Req.URL.Path}}{{$host := .Host}}<link rel="canonical" href="http://{{$host}}{{$path}}"></head>
<body class="{{if hasPrefix $path "/notes/"}}note{{else}}page{{end}}">
<header><a href="/">{{$host}}</a>
<nav>{{range $i, $n := (splitList "," "1,2,3,4,5,6,7,8,9,10,11,12")}}{{if eq (printf "/notes/%%s.html" $n) $path}}<b>{{$n}}</b>{{else}}<a href="/notes/{{$n}}.html">{{$n}}</a>{{end}} {{end}}</nav>
{{- /* the sections of the site, as a menu */ -}}
<ul class="menu">{{range $s := (splitList "," "notes,tags,archive,about,feed,search")}}<li class="{{if contains $s $path}}here{{end}}"><a href="/{{$s}}/">{{title $s}}</a></li>{{end}}</ul>
</header>
<main>{{markdown (include "/notes/%d.md")}}</main>
<aside>{{range $t := (splitList "," "gzip,caching,templates,profiles,latency,servers")}}<a class="tag" href="/tags/{{$t}}">#{{$t}}</a> {{end}}</aside>
<footer>{{with .Req.Header.Get "User-Agent"}}<small>{{.}}</small>{{end}} {{if .Req.URL.RawQuery}}<small>{{.Req.URL.RawQuery}}</small>{{end}}
{{- range $i, $y := (splitList "," "2021,2022,2023,2024,2025,2026")}}<a href="/archive/{{$y}}">{{$y}}</a>{{if lt $i 5}} · {{end}}{{end}}</footer>
</body></html>
`

// caddySite writes a small Markdown site served through Caddy's templates:
// notes as Markdown, a page per note that renders it, a sitemap, a feed, a
// stylesheet with its precompressed copy, and the Caddyfile.
func caddySite(t testing.TB, port, admin string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var sitemap strings.Builder
	sitemap.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for n := 1; n <= 12; n++ {
		var md strings.Builder
		fmt.Fprintf(&md, "# Note %d\n\nA note about *%s*, with a [link](/notes/%d.html) and a list:\n\n", n,
			[]string{"gzip", "caching", "templates", "profiles"}[n%4], n%12+1)
		for i := range 20 {
			fmt.Fprintf(&md, "- item %d of note %d, **strong** and `code`\n", i, n)
		}
		md.WriteString("\n| a | b | c |\n|---|---|---|\n")
		for i := range 15 {
			fmt.Fprintf(&md, "| %d | %d | %d |\n", i, i*n, i*i)
		}
		md.WriteString("\n```go\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n```\n\n")
		md.WriteString(strings.Repeat("Some prose that goes on for a while, as notes do. ", 40) + "\n")
		write(fmt.Sprintf("notes/%d.md", n), md.String())
		// A site's pages carry more than the note: a colophon and a
		// reading list in plain HTML, which encode compresses with the rest.
		page := strings.Replace(fmt.Sprintf(layout, n, n), "</body>", colophon()+"</body>", 1)
		write(fmt.Sprintf("notes/%d.html", n), page)
		if n <= 3 {
			// The same page stamped with the time it was rendered, as
			// pages with a "generated at" line or a per-request nonce are.
			write(fmt.Sprintf("stamped/%d.html", n), strings.Replace(page, "</footer>", "<small>rendered {{now.UnixNano}}</small></footer>", 1))
		}
		fmt.Fprintf(&sitemap, "<url><loc>http://127.0.0.1:%s/notes/%d.html</loc></url>", port, n)
	}
	sitemap.WriteString("</urlset>")
	write("sitemap.xml", sitemap.String())
	write("robots.txt", "User-agent: *\nSitemap: /sitemap.xml\n")
	write("feed.xml", `<?xml version="1.0"?><rss version="2.0"><channel><title>Notes</title><item><title>Note `+
		`1</title></item></channel></rss>`)
	css := strings.Repeat("body { font: 16px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 40em; }\n", 200)
	write("static/app.css", css)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(css))
	zw.Close()
	write("static/app.css.gz", gz.String())
	write("Caddyfile", fmt.Sprintf(`{
	admin 127.0.0.1:%s
	auto_https off
	persist_config off
}
http://127.0.0.1:%s {
	root * %s
	handle /static/* {
		file_server {
			precompressed gzip
		}
	}
	handle {
		encode gzip
		templates
		file_server
	}
}
`, admin, port, dir))
	return dir
}

// freePortT is the port of a loopback address nobody listens on.
func freePortT(t testing.TB) string {
	return strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
}

// startCaddy runs Caddy on the site; it returns the site's and the admin
// API's URLs.
func startCaddy(t testing.TB) (site, admin string) {
	bin := buildCaddy(t)
	port, adminPort := freePortT(t), freePortT(t)
	dir := caddySite(t, port, adminPort)
	startChild(t, target.ChildSpec{Argv: []string{bin, "run", "--config", filepath.Join(dir, "Caddyfile"), "--adapter", "caddyfile"},
		Addr: "127.0.0.1:" + port, Wait: time.Minute})
	return "http://127.0.0.1:" + port, "http://127.0.0.1:" + adminPort + "/debug/pprof/"
}

// caddyRun is report.json of one run on Caddy.
type caddyRun = report.Run

func TestCaddy(t *testing.T) {
	site, admin := startCaddy(t)
	d := "4s"
	if v := os.Getenv("PROBE_CADDY_DURATION"); v != "" {
		d = v
	}
	load := func(args ...string) caddyRun {
		t.Helper()
		out := t.TempDir()
		if dir := os.Getenv("PROBE_CADDY_OUT"); dir != "" {
			out = filepath.Join(dir, args[0]+strings.ReplaceAll(strings.Join(args[1:], ""), "/", "_"))
		}
		code, stdout, stderr := probeCmd.Run(t, context.Background(), append(append([]string{}, args...), "--target", site, "--pprof", admin,
			"--duration", d, "--warmup", "1s", "--concurrency", "4", "--json", "--out", out)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		var r caddyRun
		decodeStdout(t, strings.Join(args, " "), stdout, &r)
		return r
	}
	pages := load("page", "--profile")
	want := map[string]bool{"repeated-template-parse": false, "repeated-markdown-render": false, "repeated-gzip": false}
	for _, f := range pages.Findings {
		if _, ok := want[f.Rule]; ok && f.Class == "load-time" {
			want[f.Rule] = true
			if !strings.Contains(f.OwnFrame, "caddyserver/caddy") || f.Evidence == "" {
				t.Errorf("%s: own frame %q (Caddy built from the module cache is the target's own code), evidence %q", f.Rule, f.OwnFrame, f.Evidence)
			}
		}
	}
	for rule, found := range want {
		if !found {
			t.Errorf("Caddy's pages: no load-time %s among %s", rule, rules(pages.Findings))
		}
	}
	static := load("http", "--path", "/static/app.css", "--profile")
	for _, f := range static.Findings {
		if f.Class == "load-time" {
			t.Errorf("a precompressed file got a claim: %s %.0f%% (%s)", f.Rule, 100*f.CPUShare, f.Evidence)
		}
	}
	// Compressing a reply that changes with every request is per-request
	// work whatever it costs: no claim, and no experiment that would read
	// its steady cost as load-time (a longer budget than the default, so
	// one would have samples enough to claim).
	stamped := load("http", "--path", "/stamped/{n}.html", "--param", "n=1,2,3", "--profile", "--experiment-time", "30s")
	for _, f := range stamped.Findings {
		if f.Rule == "repeated-gzip" && (f.Class == "load-time" || f.Class == "cacheable") {
			t.Errorf("gzip of pages stamped per request got a claim: %s (%s)", f.Class, f.Evidence)
		}
	}
	if e := stamped.Experiment; e != nil {
		for _, f := range e.Findings {
			if f.Rule == "repeated-gzip" {
				t.Errorf("the experiment judged gzip of pages stamped per request: %s, %s", f.Verdict, f.Why)
			}
		}
	}
	if !strings.Contains(rules(stamped.Findings), "repeated-gzip") {
		t.Errorf("the stamped pages' gzip was not found at all: %s", rules(stamped.Findings))
	}
	for _, name := range []string{"sitemap", "feed"} {
		if r := load(name); r.Latency.Requests == 0 || r.Latency.Errors != 0 {
			t.Errorf("%s on Caddy: %+v", name, r)
		}
	}
}
