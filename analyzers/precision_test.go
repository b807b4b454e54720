package analyzers

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"

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
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("CPU profile: %v", err)
	}
	var mu sync.Mutex
	seen := map[string]map[string]int64{}
	var requests atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for n := c; time.Now().Before(deadline); n++ {
				path := paths[n%len(paths)]
				resp, err := http.Get(srv.URL + path)
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
		}(c)
	}
	wg.Wait()
	pprof.StopCPUProfile()
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var rs []Replies
	for _, path := range paths {
		r := Replies{Key: path, Op: "GET " + path, Request: "GET " + path}
		for body, n := range seen[path] {
			r.Requests += n
			r.Distinct++
			r.Bodies = append(r.Bodies, []byte(body))
		}
		if r.Distinct == 1 {
			r.Top = 1
		}
		rs = append(rs, r)
	}
	return p, rs
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

func checkFocus(t *testing.T, what string, f *Finding, p *profile.Profile, re string) {
	t.Helper()
	if want := focusShare(p, re); f.CPUShare < want-0.05 || f.CPUShare > want+0.05 {
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

// A sample belongs to one top-level finding: the gzip of a reply that was
// byte-identical every time is a part of the repeated reply, not more CPU.
func TestFindingsInsideFindingsArePartsOfThem(t *testing.T) {
	p, rs := loadAndProfile(t, 3*time.Second, http.HandlerFunc(sitemapHandler), "/sitemap.xml")
	fs := Analyze(p, nil, Evidence{Endpoint: "GET /sitemap.xml", Replies: rs}, DefaultRules()).Findings
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
			top += f.CPUShare
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
	p, rs := loadAndProfile(t, 3*time.Second, http.HandlerFunc(compileAndMatch), "/match")
	fs := Analyze(p, nil, Evidence{Endpoint: "GET /match", Replies: rs}, DefaultRules()).Findings
	f := find(fs, "repeated-regexp-compile")
	if f == nil {
		t.Fatalf("no repeated-regexp-compile: %s", rules(fs))
	}
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
