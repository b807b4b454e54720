package analyzers

import (
	"bytes"
	"crypto/rand"
	"encoding/csv"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

func TestVerbsFromNames(t *testing.T) {
	for _, tc := range []struct{ fn, want string }{
		{"encoding/csv.(*Reader).ReadAll", "reads csv"},
		{"strings.NewReplacer", "builds replacer"},
		{"encoding/gob.(*Decoder).Decode", "decodes gob"},
		{"golang.org/x/text/collate.New", "builds collate"},
		{"math/big.(*Int).Exp", "computes big int"},
		{"text/template.(*Template).Parse", "parses template"},
		{"main.parseCron", "parses cron"},
		{"main.(*data).uriTemplate.func2", ""},
		{"encoding/xml.Marshal", "marshals xml"},
		{"golang.org/x/text/unicode/norm.Form.String", ""},
		{"encoding/asn1.Marshal", "marshals asn1"},
		{"main.(*data).handler-fm", ""},
		{"golang.org/x/text/collate.(*Collator).KeyFromString", "computes keys of collate collator"},
		{"github.com/yosida95/uritemplate/v3.New", "builds uritemplate"},
		{"google.golang.org/protobuf/proto.MarshalOptions.Marshal", "marshals proto"},
		{"strings.(*Replacer).Replace", "replaces strings replacer"},
	} {
		got, _, _ := doesPhrase([]string{tc.fn})
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.fn, got, tc.want)
		}
	}
}

// ratesCSV is constant data a handler parses per request.
var ratesCSV = func() string {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "EUR,C%03d,%d.%04d,\"note, with comma %d\"\n", i, i%7, i*37%10000, i)
	}
	return b.String()
}()

func nonceHex() string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}

// writeRates replies with a summary of recs and a fresh nonce: the reply
// is the same every time but for the nonce.
func writeRates(w http.ResponseWriter, recs [][]string) {
	var sum float64
	var codes []string
	for _, r := range recs {
		v, _ := strconv.ParseFloat(r[2], 64)
		sum += v
		if len(codes) < 60 {
			codes = append(codes, r[0]+"/"+r[1])
		}
	}
	fmt.Fprintf(w, `{"nonce":"%s","rows":%d,"sum":%.2f,"codes":"%s"}`, nonceHex(), len(recs), sum, strings.Join(codes, " "))
}

// rateServer has the endpoints the tests profile: the same CSV parsed per
// request, a CSV that arrives as the request's body, and a CSV stored per
// user; every reply carries a fresh nonce.
type rateServer struct{ perUser map[string]string }

func (s *rateServer) rates(w http.ResponseWriter, r *http.Request) {
	recs, _ := csv.NewReader(strings.NewReader(ratesCSV)).ReadAll()
	writeRates(w, recs)
}

func (s *rateServer) upload(w http.ResponseWriter, r *http.Request) {
	recs, _ := csv.NewReader(r.Body).ReadAll()
	writeRates(w, recs)
}

func (s *rateServer) userRates(w http.ResponseWriter, r *http.Request) {
	recs, _ := csv.NewReader(strings.NewReader(s.perUser[r.URL.Query().Get("user")])).ReadAll()
	writeRates(w, recs)
}

// profiled runs requests against the handler for d under a CPU profile
// and returns the profile, its file and what the replies were.
func profiled(t *testing.T, h http.HandlerFunc, d time.Duration, req func(i int) (method, path, body string)) (*profile.Profile,
	string, []Replies) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skip("a CPU profile is already running:", err)
	}
	type keyed struct {
		requests int64
		bodies   map[string]int
		order    []string
		reqText  string
		input    bool
	}
	var mu sync.Mutex
	keys := map[string]*keyed{}
	var wg sync.WaitGroup
	// Until the process has used d of CPU (at most four times d of wall
	// time): on a busy machine a fixed time can give too few samples.
	start, deadline := cpuTime(), time.Now().Add(4*d)
	enough := func() bool { return cpuTime()-start >= d || time.Now().After(deadline) }
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !enough(); i += 3 {
				method, path, body := req(i)
				rq, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
				resp, err := srv.Client().Do(rq)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				key := rq.Method + " " + rq.URL.RequestURI()
				if body != "" {
					h := fnv.New64a()
					h.Write([]byte(body))
					key += fmt.Sprintf(" %x", h.Sum64())
				}
				mu.Lock()
				k := keys[key]
				if k == nil {
					k = &keyed{bodies: map[string]int{}, reqText: key + "\n" + body, input: body != "" || rq.URL.RawQuery != ""}
					keys[key] = k
				}
				k.requests++
				if k.bodies[string(b)]++; k.bodies[string(b)] == 1 {
					k.order = append(k.order, string(b))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	pprof.StopCPUProfile()
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var rs []Replies
	for _, key := range sortedKeys(keys) {
		k := keys[key]
		r := Replies{Key: key, Op: "rates", Requests: k.requests, Distinct: len(k.order), Input: k.input, Request: k.reqText,
			BodyBytes: len(k.reqText) - len(key) - 1}
		h := fnv.New64a()
		h.Write([]byte(k.order[0]))
		r.Top = h.Sum64()
		for _, b := range k.order[:min(3, len(k.order))] {
			r.Bodies = append(r.Bodies, []byte(b))
		}
		rs = append(rs, r)
	}
	return p, file, rs
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// focusShare is go tool pprof's share of the samples with a frame
// matching focus, of all of them.
func pprofFocusShare(t *testing.T, file, focus string) float64 {
	t.Helper()
	out, err := exec.Command("go", "tool", "pprof", "-top", "-focus="+focus, file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Showing nodes accounting for [^,]+, ([0-9.]+)% of`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no share in go tool pprof's output:\n%s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v / 100
}

const module = "github.com/probehq/probe"

func TestRepeatedWorkOnARealProfile(t *testing.T) {
	s := &rateServer{}
	get := func(int) (string, string, string) { return "GET", "/rates", "" }
	p, file, rs := profiled(t, s.rates, 1200*time.Millisecond, get)
	res := Analyze(p, nil, Evidence{Endpoint: "GET /rates", MainModule: module, Replies: rs}, DefaultRules())
	f := find(res.Findings, RepeatedWorkRule)
	if f == nil {
		t.Fatalf("no repeated-work in %+v (unexplained %+v)", res.Findings, res.Unexplained)
	}
	if f.Class != "load-time" || !strings.HasSuffix(f.OwnFrame, "(*rateServer).rates") {
		t.Errorf("class %s, own frame %s: %s", f.Class, f.OwnFrame, f.Evidence)
	}
	if len(f.Callees) == 0 || f.Callees[0].Function != "encoding/csv.(*Reader).ReadAll" {
		t.Errorf("callees %+v", f.Callees)
	}
	if !strings.Contains(f.Evidence, "looks like it reads csv") || !strings.Contains(f.Suggestion, "parse the csv once") {
		t.Errorf("evidence %q, suggestion %q", f.Evidence, f.Suggestion)
	}
	if want := pprofFocusShare(t, file, `\(\*rateServer\)\.rates$`); f.CPUShare < want-0.05 || f.CPUShare > want+0.05 {
		t.Errorf("share %.2f; go tool pprof -focus says %.2f", f.CPUShare, want)
	}
	if want := pprofFocusShare(t, file, `csv\.\(\*Reader\)\.ReadAll`); f.Callees[0].CPUShare < want-0.05 || f.Callees[0].CPUShare > want+0.05 {
		t.Errorf("ReadAll's share %.2f; go tool pprof -focus says %.2f", f.Callees[0].CPUShare, want)
	}
	for _, u := range res.Unexplained {
		if u.Function == f.OwnFrame {
			t.Errorf("the repeated work is also unexplained: %+v", u)
		}
	}

	// Without a run, nothing shows the replies did not change: the same
	// profile's work is unexplained, with its callees and what they do.
	res = Analyze(p, nil, Evidence{MainModule: module}, DefaultRules())
	if find(res.Findings, RepeatedWorkRule) != nil {
		t.Errorf("repeated-work without a run: %+v", res.Findings)
	}
	var u *Unexplained
	for i := range res.Unexplained {
		if strings.HasSuffix(res.Unexplained[i].Function, "(*rateServer).rates") {
			u = &res.Unexplained[i]
		}
	}
	if u == nil {
		t.Fatalf("rates not unexplained: %+v (findings %+v)", res.Unexplained, res.Findings)
	}
	if len(u.Callees) == 0 || u.Callees[0].Function != "encoding/csv.(*Reader).ReadAll" || u.LooksLike != "looks like it reads csv" {
		t.Errorf("unexplained %+v", u)
	}
	if want := pprofFocusShare(t, file, `csv\.\(\*Reader\)\.ReadAll`); u.Callees[0].CPUShare < want-0.05 || u.Callees[0].CPUShare > want+0.05 {
		t.Errorf("unexplained ReadAll's share %.2f; go tool pprof -focus says %.2f", u.Callees[0].CPUShare, want)
	}
}

// The same parsing, but of what varies with the request: the request's
// body, or a CSV each user stored. No load-time claim may be made.
func TestRepeatedWorkTraps(t *testing.T) {
	users := []string{"ann", "bob", "cy", "dee"}
	s := &rateServer{perUser: map[string]string{}}
	for i, u := range users {
		s.perUser[u] = strings.ReplaceAll(ratesCSV, "EUR", fmt.Sprintf("U%d", i)) + fmt.Sprintf("X,Y,%d.5,z\n", i)
	}
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		req  func(i int) (method, path, body string)
	}{
		{"body", s.upload, func(int) (string, string, string) { return "POST", "/upload", ratesCSV }},
		{"per user", s.userRates, func(i int) (string, string, string) { return "GET", "/rates?user=" + users[i%len(users)], "" }},
	} {
		p, _, rs := profiled(t, tc.h, 800*time.Millisecond, tc.req)
		res := Analyze(p, nil, Evidence{Endpoint: tc.name, MainModule: module, Replies: rs}, DefaultRules())
		for _, f := range res.Findings {
			if f.Class == "load-time" {
				t.Errorf("%s: a load-time claim: %+v", tc.name, f)
			}
		}
		if f := find(res.Findings, RepeatedWorkRule); f != nil && tc.name == "body" && !strings.Contains(f.Evidence, "per-request by nature") {
			t.Errorf("%s: the request's body decoded is repeated work: %+v", tc.name, f)
		}
		if f := find(res.Findings, RepeatedWorkRule); f != nil && !strings.Contains(f.Evidence, "what would settle it") {
			t.Errorf("%s: %s", tc.name, f.Evidence)
		}
	}
}

// A catalog rule names a known library better: its samples are left to
// it, and repeated-work takes only what no rule claims.
func TestRepeatedWorkLeavesCatalogSamples(t *testing.T) {
	h := []string{"own:app.(*Server).page", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve"}
	p := newProfile("cpu").
		add(5*sec, append([]string{"regexp/syntax.Parse", "regexp.compile", "regexp.MustCompile"}, h...)...).
		add(3*sec, append([]string{"encoding/gob.(*Decoder).decodeStruct", "encoding/gob.(*Decoder).Decode"}, h...)...).
		add(2*sec, append([]string{"net/http.(*response).Write"}, h...)...).p
	page := []byte(strings.Repeat("<li>the same list every time</li>", 40))
	ev := Evidence{Endpoint: "GET /page", Replies: []Replies{{Key: "/page", Op: "GET /page", Requests: 300, Distinct: 300,
		Bodies: [][]byte{append([]byte("nonce a1b2c3d4 "), page...), append([]byte("nonce e5f6a7b8 "), page...)}}}}
	fs := Analyze(p, nil, ev, DefaultRules()).Findings
	re, rw := find(fs, "repeated-regexp-compile"), find(fs, RepeatedWorkRule)
	if re == nil || rw == nil {
		t.Fatalf("want both findings: %+v", fs)
	}
	if rw.CPUShare < 0.29 || rw.CPUShare > 0.31 || len(rw.Callees) != 1 || rw.Callees[0].Function != "encoding/gob.(*Decoder).Decode" {
		t.Errorf("repeated-work took %.2f of the CPU, callees %+v; want 0.30, gob alone", rw.CPUShare, rw.Callees)
	}
	if rw.OwnFrame != "app.(*Server).page" || rw.Class != "load-time" || !strings.Contains(rw.Evidence, "decodes gob") {
		t.Errorf("%+v", rw)
	}
	// The same replies with nothing left beside the catalog's: no finding.
	p = newProfile("cpu").add(8*sec, append([]string{"regexp/syntax.Parse", "regexp.compile", "regexp.MustCompile"}, h...)...).
		add(2*sec, append([]string{"net/http.(*response).Write"}, h...)...).p
	if f := find(Analyze(p, nil, ev, DefaultRules()).Findings, RepeatedWorkRule); f != nil {
		t.Errorf("repeated-work over the catalog's samples: %+v", f)
	}
}

// A parser of the target's own says what it does by its own name, not by
// the helpers it calls (strconv.Atoi is no verb; under it, ParseInt
// would read as "parses int").
func TestRepeatedWorkOwnParserNamesItsVerb(t *testing.T) {
	h := []string{"own:app.parseCron", "own:app.(*Server).schedule", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve"}
	p := newProfile("cpu").
		add(3*sec, append([]string{"strconv.ParseInt", "strconv.Atoi"}, h...)...).
		add(4*sec, h...).
		add(1*sec, append([]string{"net/http.(*response).Write"}, h[1:]...)...).p
	page := []byte(strings.Repeat("<li>0 9 * * 1-5 → Mon 09:00</li>", 40))
	ev := Evidence{Endpoint: "GET /schedule", Replies: []Replies{{Key: "/schedule", Op: "GET /schedule", Requests: 300, Distinct: 300,
		Bodies: [][]byte{append([]byte("at 12:00:01 "), page...), append([]byte("at 12:00:02 "), page...)}}}}
	f := find(Analyze(p, nil, ev, DefaultRules()).Findings, RepeatedWorkRule)
	if f == nil {
		t.Fatalf("no repeated-work: %+v", Analyze(p, nil, ev, DefaultRules()).Findings)
	}
	if f.OwnFrame != "app.parseCron" || !strings.Contains(f.Evidence, "looks like it parses cron") || !strings.Contains(f.Evidence,
		"its own code 50%") {
		t.Errorf("%s: %s", f.OwnFrame, f.Evidence)
	}
}

// The site is the deepest own function holding half the work and CPU
// enough to speak of: a field reader under the parser with 21% of the
// CPU serving requests (under the quarter) leaves the site to the parser
// (33%); the same reader with 30% is the site itself.
func TestRepeatedWorkSiteFallsBackToItsCaller(t *testing.T) {
	h := []string{"own:app.parseCron", "own:app.(*Server).schedule", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve"}
	page := []byte(strings.Repeat("<li>0 9 * * 1-5 → Mon 09:00</li>", 40))
	ev := Evidence{Endpoint: "GET /schedule", Replies: []Replies{{Key: "/schedule", Op: "GET /schedule", Requests: 300,
		Distinct: 300, Bodies: [][]byte{append([]byte("at 12:00:01 "), page...), append([]byte("at 12:00:02 "), page...)}}}}
	for _, tc := range []struct {
		reader, parser int64 // tenths of a second
		want           string
	}{
		{21, 12, "app.parseCron"},
		{30, 3, "app.readField"},
	} {
		p := newProfile("cpu").
			add(tc.reader*sec/10, append([]string{"strconv.ParseInt", "own:app.readField"}, h...)...).
			add(tc.parser*sec/10, h...).
			add((100-tc.reader-tc.parser)*sec/10, append([]string{"net/http.(*response).Write"}, h[1:]...)...).p
		f := find(Analyze(p, nil, ev, DefaultRules()).Findings, RepeatedWorkRule)
		if f == nil {
			t.Fatalf("reader %d%%: no repeated-work: %+v", tc.reader, Analyze(p, nil, ev, DefaultRules()).Findings)
		}
		if f.OwnFrame != tc.want {
			t.Errorf("reader %d%% of the serving CPU: the site is %s, want %s (%s)", tc.reader, f.OwnFrame, tc.want, f.Evidence)
		}
	}
}
