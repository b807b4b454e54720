package analyzers

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	htmltemplate "html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/google/go-jsonnet"
	"github.com/google/pprof/profile"
	_ "modernc.org/sqlite"

	"github.com/probehq/probe/lib/frames"
)

// The tests in this file take real CPU profiles: a server in the test
// process (its handlers are the target's own code, this package's) under
// load from clients for a second or two, profiled by runtime/pprof.

// loadAndProfile serves h on a loopback server, sends GETs to each path
// from two clients until d has passed, and returns the CPU profile and
// the replies per path, as a run's evidence would hold them.
func loadAndProfile(t *testing.T, d time.Duration, h http.Handler, paths ...string) (*profile.Profile, []Replies) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	var mu sync.Mutex
	seen := map[string]map[string]int64{}
	var requests, clients atomic.Int64
	// Run for d, and on until the process has used enough CPU for the
	// shares to be more than a few samples (the machine may be busy).
	p := profileWhile(t, d, 2, func(done func() bool) {
		c := int(clients.Add(1) - 1)
		for n := c; !done(); n++ {
			path := paths[n%len(paths)]
			var resp *http.Response
			var err error
			if p, ok := strings.CutPrefix(path, "POST "); ok {
				resp, err = http.Post(srv.URL+p, "text/plain", strings.NewReader(postedTemplate))
			} else {
				resp, err = http.Get(srv.URL + path)
			}
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			requests.Add(1)
			mu.Lock()
			if seen[path] == nil {
				seen[path] = map[string]int64{}
			}
			seen[path][string(body)]++
			mu.Unlock()
		}
	})
	var rs []Replies
	for _, path := range paths {
		// One endpoint, its queries the keys, as a run's digests keep them.
		endpoint, _, hasQuery := strings.Cut(path, "?")
		r := Replies{Key: path, Op: "GET " + endpoint, Request: "GET " + path, Input: hasQuery}
		if p, ok := strings.CutPrefix(path, "POST "); ok {
			r = Replies{Key: p, Op: path, Request: path + " " + postedTemplate, Input: true, BodyBytes: len(postedTemplate)}
		}
		for body, n := range seen[path] {
			r.Requests += n
			r.Distinct++
			r.Bodies = append(r.Bodies, []byte(body))
		}
		if r.Distinct == 1 { // the reply's digest, as a run's: equal bytes, equal digests
			h := fnv.New64a()
			h.Write(r.Bodies[0])
			r.Top = h.Sum64()
		}
		rs = append(rs, r)
	}
	return p, rs
}

// profileWhile is the test process's CPU profile while clients copies of
// client run: each is given done, which turns true once d has passed and
// the process has used d/2 of CPU (6d at most, on a busy machine).
func profileWhile(t *testing.T, d time.Duration, clients int, client func(done func() bool)) *profile.Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("CPU profile: %v", err)
	}
	start, cpu0 := time.Now(), processCPU()
	done := func() bool {
		since := time.Since(start)
		return since >= d && (processCPU()-cpu0 >= d/2 || since >= 6*d)
	}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() { client(done) })
	}
	wg.Wait()
	pprof.StopCPUProfile()
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// heapProfile is the allocations so far (the heap profile's cumulative
// alloc_space), as probe fetches them from a target.
func heapProfile(t *testing.T) *profile.Profile {
	t.Helper()
	// The profile is as of the last completed collection: without one
	// now, the allocations of the load just run are missing when no GC
	// ran after it. TestServingCPUHoldsTheMCPSDKsHandlers needs them when
	// few CPU samples caught the SDK's writes (it failed once beside other
	// packages' tests). probe asks targets for gc=1 for the same reason.
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// heapDelta is what was allocated between two heap profiles.
func heapDelta(t *testing.T, before, after *profile.Profile) *profile.Profile {
	t.Helper()
	before.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{after, before})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// processCPU is the CPU time the test process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// focusShare is what `go tool pprof -focus=re` shows of p: the share of
// the samples with a frame re matches.
func focusShare(p *profile.Profile, re string) float64 {
	var total, focused int64
	for _, s := range p.Sample {
		total += s.Value[1]
	}
	q := p.Copy()
	q.FilterSamplesByName(regexp.MustCompile(re), nil, nil, nil)
	for _, s := range q.Sample {
		focused += s.Value[1]
	}
	return share(focused, total)
}

// furtherCounted is the evidence's "a further N% of the CPU …" that a
// finding's own share leaves out and pprof's focus on its frames counts.
var furtherCounted = regexp.MustCompile(`a further ([0-9.]+)% of the CPU (?:is this work inside|is this work on other ` +
	`data|decodes the request's own input|allocates under it)`)

func checkFocus(t *testing.T, what string, f *Finding, p *profile.Profile, re string) {
	t.Helper()
	claimed := f.CPUShare
	for _, m := range furtherCounted.FindAllStringSubmatch(f.Evidence, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		claimed += v / 100
	}
	if want := focusShare(p, re); claimed < want-0.02 || claimed > want+0.02 {
		t.Errorf("%s: %s %.0f%%, pprof -focus=%s %.0f%% (%s)", what, f.Rule, 100*f.CPUShare, re, 100*want, f.Evidence)
	}
}

type sitemapURL struct {
	Loc     string `xml:"loc"`
	LastMod string `xml:"lastmod"`
}

var sitemapURLs = func() []sitemapURL {
	var us []sitemapURL
	for i := 0; i < 400; i++ {
		us = append(us, sitemapURL{Loc: fmt.Sprintf("https://example.org/notes/%d-%x", i, i*7919), LastMod: "2026-11-30"})
	}
	return us
}()

// sitemapHandler builds the same sitemap on every request and gzips it.
func sitemapHandler(w http.ResponseWriter, r *http.Request) {
	raw, _ := xml.Marshal(struct {
		XMLName xml.Name     `xml:"urlset"`
		URLs    []sitemapURL `xml:"url"`
	}{URLs: sitemapURLs})
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
	zw.Write(raw)
	zw.Close()
	w.Header().Set("Content-Encoding", "gzip")
	w.Write(zb.Bytes())
}

// A repeated reply's allocations are its handler's: its alloc share is
// go tool pprof's -focus on the handler in the allocation profile of the
// same run (it was 0 % whatever the handler allocated).
func TestRepeatedReplyCountsItsAllocations(t *testing.T) {
	_, allocs, fs := analyzeLoadWithAllocs(t, 2*time.Second, http.HandlerFunc(sitemapHandler), "GET /sitemap.xml", "/sitemap.xml")
	reply := find(fs, "repeated-reply")
	if reply == nil || !strings.HasSuffix(reply.OwnFrame, ".sitemapHandler") {
		t.Fatalf("repeated-reply %+v", reply)
	}
	want := focusShare(allocs, `analyzers\.sitemapHandler$`)
	if want < 0.3 || reply.AllocShare < want-0.05 || reply.AllocShare > want+0.05 {
		t.Errorf("alloc share %.2f; pprof -focus=sitemapHandler on alloc_space says %.2f", reply.AllocShare, want)
	}
}

// A sample belongs to one top-level finding: the gzip of a reply that was
// byte-identical every time is a part of the repeated reply, not more CPU.
func TestFindingsInsideFindingsArePartsOfThem(t *testing.T) {
	p, fs := analyzeLoad(t, 3*time.Second, http.HandlerFunc(sitemapHandler), "GET /sitemap.xml", "/sitemap.xml")
	reply, gz := find(fs, "repeated-reply"), find(fs, "repeated-gzip")
	if reply == nil || gz == nil {
		t.Fatalf("want repeated-reply and repeated-gzip: %s", rules(fs))
	}
	if gz.PartOf != "repeated-reply" || reply.PartOf != "" {
		t.Errorf("gzip part of %q, reply part of %q; want gzip a part of the reply", gz.PartOf, reply.PartOf)
	}
	checkFocus(t, "sitemap", gz, p, `^compress/`)
	var top float64
	for i, f := range fs {
		if f.PartOf == "" {
			top += f.CPUShare - f.CPUShareShared
		} else if j := indexOf(fs, f.PartOf); j < 0 || j > i {
			t.Errorf("%s listed before its parent %s", f.Rule, f.PartOf)
		}
	}
	if top > 1.0001 {
		t.Errorf("top-level shares add up to %.0f%%: %s", 100*top, rules(fs))
	}
}

func indexOf(fs []Finding, rule string) int {
	for i := range fs {
		if fs[i].Rule == rule {
			return i
		}
	}
	return -1
}

// analyzeLoad is loadAndProfile of paths on h for d, analysed with the
// default rules, the replies the evidence of endpoint: the CPU profile and
// the findings.
func analyzeLoad(t *testing.T, d time.Duration, h http.Handler, endpoint string, paths ...string) (*profile.Profile, []Finding) {
	t.Helper()
	p, rs := loadAndProfile(t, d, h, paths...)
	return p, Analyze(p, nil, Evidence{Endpoint: endpoint, Replies: rs}, DefaultRules()).Findings
}

// analyzeLoadWithAllocs is analyzeLoad with what the heap allocated during
// the load as the allocation profile, returned too.
func analyzeLoadWithAllocs(t *testing.T, d time.Duration, h http.Handler, endpoint string, paths ...string) (cpu, allocs *profile.Profile,
	fs []Finding) {
	t.Helper()
	before := heapProfile(t)
	cpu, rs := loadAndProfile(t, d, h, paths...)
	allocs = heapDelta(t, before, heapProfile(t))
	return cpu, allocs, Analyze(cpu, allocs, Evidence{Endpoint: endpoint, Replies: rs}, DefaultRules()).Findings
}

// mustFind is fs's finding of rule; without one the test stops, naming the
// findings there are.
func mustFind(t *testing.T, fs []Finding, rule string) *Finding {
	t.Helper()
	f := find(fs, rule)
	if f == nil {
		t.Fatalf("no %s: %s", rule, rules(fs))
	}
	return f
}

func rules(fs []Finding) string {
	var out []string
	for _, f := range fs {
		s := fmt.Sprintf("%s %.0f%%", f.Rule, 100*f.CPUShare)
		if f.PartOf != "" {
			s += " (part of " + f.PartOf + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

var (
	longText = strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit; ", 1500) + "token=abc123"
	// Case-folded classes and letters of an anchored (one-pass) pattern:
	// the compiler sorts their ranges and runes.
	classes = "[zyxwvutsrqponmlkjihgfedcba_9876543210]kelvin"
)

// compileAndMatch compiles a pattern per request (regexp.MatchString
// does) and matches it over a long text.
func compileAndMatch(w http.ResponseWriter, r *http.Request) {
	ok, _ := regexp.MatchString(`token=([a-f0-9]+)$`, longText)
	pat := "(?i)^" + strings.Repeat(classes, 40)
	re := regexp.MustCompile(pat)
	fmt.Fprintf(w, "%v %v", ok, re.NumSubexp())
}

// Compiling is not matching, and the compiler's own sorting is the
// compiler's: the rule's share is what pprof shows for compiling.
func TestRegexpCompileIsNotMatching(t *testing.T) {
	p, fs := analyzeLoad(t, 3*time.Second, http.HandlerFunc(compileAndMatch), "GET /match", "/match")
	f := mustFind(t, fs, "repeated-regexp-compile")
	checkFocus(t, "compile and match", f, p, `^regexp\.compile$`)
	if m := focusShare(p, `^regexp\.\(\*Regexp\)\.`); m < 0.08 {
		t.Errorf("matching is only %.0f%% of this profile: the test cannot tell it from compiling", 100*m)
	}
	if s := find(fs, "repeated-sort"); s != nil {
		t.Errorf("the compiler's sorting taken for a repeated sort: %+v", *s)
	}
	// Sample by sample: the sort rule claims none of the compiler's sorts.
	all := withPeers(DefaultRules())
	sortRule := &all[indexOfRule(all, "repeated-sort")]
	cpu, _ := stacks(p, "cpu", frames.Code{})
	inCompiler := 0
	for _, st := range cpu {
		under := false
		for _, fn := range st.funcs {
			under = under || fn == "regexp.compile"
		}
		if !under || !slices.ContainsFunc(st.funcs, sortRule.memo.matchedBy(sortRule)) {
			continue
		}
		inCompiler++
		if sortRule.matchAt(st) >= 0 {
			t.Errorf("a sort inside the regexp compiler claimed by repeated-sort: %v", st.funcs)
			break
		}
	}
	if inCompiler == 0 {
		t.Errorf("no sample caught the compiler sorting; the test shows nothing")
	}
}

func indexOfRule(rs []Rule, id string) int {
	for i := range rs {
		if rs[i].ID == id {
			return i
		}
	}
	panic(id)
}

// siteDB is a SQLite database (the pure-Go driver, through database/sql)
// with a settings row and a page whose views each request counts.
func siteDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+t.TempDir()+"/site.db?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT)`,
		`INSERT INTO settings VALUES ('title', 'Notes of a gardener')`,
		`CREATE TABLE pages (id INTEGER PRIMARY KEY, views INTEGER)`,
		`INSERT INTO pages VALUES (1, 0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.SetMaxOpenConns(1)
	return db
}

type dbSite struct{ db *sql.DB }

// countView writes: one UPDATE per request.
func (s dbSite) countView(w http.ResponseWriter, r *http.Request) {
	if _, err := s.db.ExecContext(r.Context(), `UPDATE pages SET views = views + 1 WHERE id = ?`, 1); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	io.WriteString(w, "counted")
}

// readSettings reads the same row on every request.
func (s dbSite) readSettings(w http.ResponseWriter, r *http.Request) {
	var title string
	for i := 0; i < 50; i++ {
		if err := s.db.QueryRowContext(context.Background(), `SELECT value FROM settings WHERE key = ?`, "title").Scan(&title); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
	}
	io.WriteString(w, title)
}

func (s dbSite) mux() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/view", s.countView)
	m.HandleFunc("/settings", s.readSettings)
	return m
}

// A statement that writes is never a movable read; the read's own frame
// is the server's handler, past database/sql and the driver.
func TestWritesAreNoRepeatedQuery(t *testing.T) {
	site := dbSite{siteDB(t)}
	p, rs := loadAndProfile(t, 2*time.Second, site.mux(), "/view")
	if w := focusShare(p, `^database/sql\.\(\*DB\)\.ExecContext$`); w < 0.05 {
		t.Fatalf("the UPDATEs are only %.0f%% of the profile: the test shows nothing", 100*w)
	}
	fs := Analyze(p, nil, Evidence{Endpoint: "GET /view", Replies: rs}, DefaultRules()).Findings
	if f := find(fs, "repeated-db-query"); f != nil {
		t.Errorf("a per-request UPDATE called a repeated read: %+v", *f)
	}

	p, rs = loadAndProfile(t, 3*time.Second, site.mux(), "/settings", "/view")
	fs = Analyze(p, nil, Evidence{Endpoint: "GET /settings", Replies: rs[:1]}, DefaultRules()).Findings
	f := find(fs, "repeated-db-query")
	if f == nil {
		t.Fatalf("no repeated-db-query for the settings read: %s", rules(fs))
	}
	checkFocus(t, "settings read", f, p, `^database/sql\.(\(\*DB\)\.QueryRowContext|\(\*Row\)\.Scan)$`)
	const handler = "github.com/probehq/probe/analyzers.dbSite.readSettings"
	if f.OwnFrame != handler {
		t.Errorf("own frame %q, want the handler %s", f.OwnFrame, handler)
	}

	// The same profile as a cgo driver shows it: the engine's functions
	// are C symbols with no package, the driver's calls into it _Cfunc_
	// trampolines generated into a build directory.
	cgo := p.Copy()
	for _, fn := range cgo.Function {
		switch pkg := frames.PkgPath(fn.Name); {
		case strings.HasPrefix(pkg, "modernc.org/sqlite/lib"), strings.HasPrefix(pkg, "modernc.org/libc"):
			fn.Name, fn.Filename = strings.TrimLeft(fn.Name[len(pkg)+1:], "_X"), ""
		case pkg == "modernc.org/sqlite":
			fn.Name = "github.com/mattn/go-sqlite3._Cfunc_" + strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
					return r
				}
				return '_'
			}, fn.Name[len(pkg)+1:])
			fn.Filename = "/tmp/go-build2712/b073/_cgo_gotypes.go"
		}
	}
	fs = Analyze(cgo, nil, Evidence{Endpoint: "GET /settings", Replies: rs[:1]}, DefaultRules()).Findings
	if f := find(fs, "repeated-db-query"); f == nil || f.OwnFrame != handler {
		t.Errorf("through a cgo driver: %+v, want own frame %s", f, handler)
	}
}

// slowPage spends 400 ms of CPU building the same page.
func slowPage(w http.ResponseWriter, r *http.Request) {
	x := uint64(1)
	for start := time.Now(); time.Since(start) < 400*time.Millisecond; {
		for i := 0; i < 10000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	fmt.Fprintf(w, "<html>%d</html>", x%2)
}

// An endpoint too slow to get the replies the evidence needs is no
// silence: the finding says how many it got, how many it needs, and what
// to change.
func TestThinEvidenceIsSaidOutLoud(t *testing.T) {
	p, rs := loadAndProfile(t, 1500*time.Millisecond, http.HandlerFunc(slowPage), "/slow")
	got := rs[0].Requests
	if got >= minReplyRequests || rs[0].Distinct != 1 {
		t.Skipf("%d replies, %d distinct: not a thin run", got, rs[0].Distinct)
	}
	fs := Analyze(p, nil, Evidence{Endpoint: "GET /slow", Replies: rs}, DefaultRules()).Findings
	f := find(fs, "repeated-reply")
	if f == nil {
		t.Fatalf("nothing said about the reply evidence: %s", rules(fs))
	}
	for _, want := range []string{fmt.Sprintf("%d replies", got), fmt.Sprintf("needs %d", minReplyRequests)} {
		if !strings.Contains(f.Evidence, want) {
			t.Errorf("evidence %q: want %q", f.Evidence, want)
		}
	}
	if f.Class != "info" || !strings.Contains(f.Suggestion, "--duration") || !strings.Contains(f.Suggestion, "--concurrency") {
		t.Errorf("class %s, suggestion %q", f.Class, f.Suggestion)
	}
}

// postedTemplate is the body the clients post: a template of the user's.
var postedTemplate = strings.Repeat(`{{range .}}<li>{{.Name | printf "%q"}} {{if .Done}}done{{else}}open{{end}}</li>{{end}}`, 40)

type todo struct {
	Name string
	Done bool
}

var todos = []todo{{"water the roses", true}, {"prune the apple tree", false}}

func renderTemplate(w http.ResponseWriter, text string) {
	t, err := template.New("page").Parse(text)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	t.Execute(w, todos)
}

type templates struct{ file string }

// fromLiteral parses a template written in the code.
func (templates) fromLiteral(w http.ResponseWriter, r *http.Request) {
	renderTemplate(w, postedTemplate)
}

// fromFile parses the template a user saved, read from its file each time.
func (ts templates) fromFile(w http.ResponseWriter, r *http.Request) {
	b, err := os.ReadFile(ts.file)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	renderTemplate(w, string(b))
}

// fromQuery parses the template the query carries.
func (templates) fromQuery(w http.ResponseWriter, r *http.Request) {
	renderTemplate(w, r.URL.Query().Get("tpl"))
}

// fromBody parses the template the request carries.
func (templates) fromBody(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	renderTemplate(w, string(b))
}

// Parsing is movable to load time only when what is parsed is constant:
// a template read from storage or carried by the request is at most
// cacheable, and the evidence says where it came from.
func TestInvariantByNatureIsAClaimAboutTheInput(t *testing.T) {
	ts := templates{file: t.TempDir() + "/saved.tmpl"}
	if err := os.WriteFile(ts.file, []byte(postedTemplate), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		h          http.HandlerFunc
		class      string
		from       string
	}{
		{"a literal", "/literal", ts.fromLiteral, "load-time", ""},
		{"a saved file", "/saved", ts.fromFile, "cacheable", "files or a database"},
		{"the request body", "POST /render", ts.fromBody, "cacheable", "the request's body"},
		// A template in the query is read too cheaply to be sampled: the
		// profile alone would call it a constant; the replies differ.
		{"the query", "/q?tpl=" + url.QueryEscape(postedTemplate) + ",/q?tpl=" + url.QueryEscape("<p>{{.}}</p>"+postedTemplate),
			ts.fromQuery, "cacheable", InvariantPending},
	} {
		p, _, fs := analyzeLoadWithAllocs(t, 1500*time.Millisecond, tc.h, tc.path, strings.Split(tc.path, ",")...)
		f := find(fs, "repeated-template-parse")
		if f == nil {
			t.Errorf("%s: no repeated-template-parse: %s", tc.name, rules(fs))
			continue
		}
		if f.Class != tc.class || !strings.Contains(f.Evidence, tc.from) {
			t.Errorf("%s: %s (%s)", tc.name, f.Class, f.Evidence)
		}
		checkFocus(t, tc.name, f, p, `^text/template\.\(\*Template\)\.Parse$`)
	}
}

// htmlFromLiteral makes an html/template per request from a constant:
// html/template escapes a template once, at its first Execute, so a new
// one pays the escaping too (Centrifugo's configdoc: the parse 2 % of the
// CPU, its escaping 37 %, which --verify's hoist of the parse saved).
func htmlFromLiteral(w http.ResponseWriter, r *http.Request) {
	t, err := htmltemplate.New("page").Parse(postedTemplate)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	t.Execute(w, todos)
}

// The work of a template made per request is its parse and, for
// html/template, its escaping: the share is both, as pprof's focus on
// both gives it, and more than the parse alone.
func TestATemplateMadePerRequestPaysItsEscaping(t *testing.T) {
	p, fs := analyzeLoad(t, 1500*time.Millisecond, http.HandlerFunc(htmlFromLiteral), "/html", "/html")
	f := mustFind(t, fs, "repeated-template-parse")
	if f.Class != "load-time" {
		t.Errorf("a constant template: %s (%s)", f.Class, f.Evidence)
	}
	checkFocus(t, "html/template", f, p, `^html/template\.\(\*Template\)\.(Parse|escape)$`)
	if parse := focusShare(p, `^html/template\.\(\*Template\)\.Parse$`); f.CPUShare < parse+0.05 {
		t.Errorf("the share %.0f%% holds not the escaping beside the parse's %.0f%%", 100*f.CPUShare, 100*parse)
	}
}

// notesJSON is the server's own data, given to an interpreter per query.
var notesJSON = func() string {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 300; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%d,"title":"note %d","tags":["garden","roses"],"body":"%s"}`, i, i, strings.Repeat("soil ", 20))
	}
	return b.String() + "]"
}()

// queryNotes reads the posted query, then has Jsonnet parse the notes'
// JSON (encoding/json underneath) and count them.
func queryNotes(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	vm := jsonnet.MakeVM()
	vm.ExtVar("notes", notesJSON)
	out, err := vm.EvaluateAnonymousSnippet("q", "std.length(std.parseJson(std.extVar('notes')))")
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	io.WriteString(w, out)
}

// Decoding the server's own data is no request decoding, though the
// requests carried bodies: the interpreter that asks for it never reads
// the request.
func TestTheServersOwnDataIsNoRequestDecoding(t *testing.T) {
	p, _, fs := analyzeLoadWithAllocs(t, 1500*time.Millisecond, http.HandlerFunc(queryNotes), "POST /query", "POST /query")
	f := mustFind(t, fs, "repeated-json-decode")
	if f.Class == "info" || strings.Contains(f.Suggestion, "cannot move") {
		t.Errorf("the notes' JSON called request decoding: %s (%s)", f.Class, f.Evidence)
	}
	checkFocus(t, "notes JSON", f, p, `^encoding/json\.Unmarshal$`)
}

// focusIgnoreShare is focusShare with pprof's -ignore too.
func focusIgnoreShare(p *profile.Profile, focus, ignore string) float64 {
	var total, focused int64
	for _, s := range p.Sample {
		total += s.Value[1]
	}
	q := p.Copy()
	q.FilterSamplesByName(regexp.MustCompile(focus), regexp.MustCompile(ignore), nil, nil)
	for _, s := range q.Sample {
		focused += s.Value[1]
	}
	return share(focused, total)
}
