package probes

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/result"
)

func TestParseRates(t *testing.T) {
	r, err := ParseRamp("10:500/5m")
	if err != nil || r.From != 10 || r.To != 500 || r.Over != 5*time.Minute || r.Duration() != 5*time.Minute {
		t.Fatalf("%+v %v", r, err)
	}
	if got := r.At(150 * time.Second); got != 255 {
		t.Errorf("halfway: %g, want 255", got)
	}
	if ws := r.Windows(); len(ws) != 30 || ws[0].Rate <= 10 || ws[29].Rate >= 500 || ws[29].To != 5*time.Minute {
		t.Errorf("windows %d: %+v … %+v", len(ws), ws[0], ws[len(ws)-1])
	}
	s, err := ParseSteps("50,100,200/60s")
	if err != nil || len(s.Steps) != 3 || s.Duration() != 3*time.Minute || s.At(61*time.Second) != 100 {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []struct{ s, want string }{
		{"500:10/5m", "not above the start"}, {"10:500", "FROM:TO/DURATION"}, {"0:10/1m", "above 0"}, {"10:20/1s", "5s to 24h"},
	} {
		if _, err := ParseRamp(bad.s); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ramp %q: %v, want %q", bad.s, err, bad.want)
		}
	}
	for _, bad := range []struct{ s, want string }{
		{"100,50/60s", "must increase"}, {"100/60s", "two steps"}, {"50,x/60s", "no rate"}, {"50,100", "/DURATION"}, {"50,100/2h", "1s to 1h"},
	} {
		if _, err := ParseSteps(bad.s); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("steps %q: %v, want %q", bad.s, err, bad.want)
		}
	}
}

// Arrivals are evenly spaced at the rate of the moment: a step of 10/s
// for 2 s starts 20 sessions, 100 ms apart.
func TestArrivals(t *testing.T) {
	r := result.Rates{Steps: []float64{10, 20}, Each: 2 * time.Second}
	a := r.Arrivals()
	if len(a) != 60 || a[1]-a[0] != 100*time.Millisecond || a[21]-a[20] != 50*time.Millisecond {
		t.Errorf("%d arrivals, gaps %v and %v", len(a), a[1]-a[0], a[21]-a[20])
	}
}

func TestScenarioValidate(t *testing.T) {
	ok := &Scenario{Name: "s", Values: map[string][]string{"q": {"a"}}, Steps: []Step{
		{Name: "login", Path: "/login?u={{q}}", Extract: []Extract{{Name: "token", Header: "X-Token"}}},
		{Name: "list", Path: "/items", Header: nil, Body: `{"t": "{{token}}"}`},
	}}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	bad := &Scenario{Name: "s", Steps: []Step{{Name: "a", Path: "/x/{{id}}"},
		{Name: "b", Path: "/y", Extract: []Extract{{Name: "id", Header: "X"}}}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "step a uses {{id}}") {
		t.Errorf("a value extracted only later: %v", err)
	}
}

// A scenario carries a token from a header and an id from a JSON reply
// into the next requests, escaped for where it goes.
func TestScenarioCarriesValues(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 512)
		n, _ := r.Body.Read(b)
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization")+" "+string(b[:n]))
		switch r.URL.Path {
		case "/login":
			w.Header().Set("X-Token", "tok en")
		case "/items":
			fmt.Fprint(w, `{"items": [{"id": "a b/c"}, {"id": 2}]}`)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	sc := &Scenario{Name: "s", Values: map[string][]string{"user": {"ann", "bob"}}, Steps: []Step{
		{Name: "login", Method: "POST", Path: "/login?u={{user}}", Extract: []Extract{{Name: "token", Header: "X-Token"}}},
		{Name: "list", Method: "GET", Path: "/items", Extract: []Extract{{Name: "id", JSON: []any{"items", 0, "id"}}}},
		{Name: "open", Method: "POST", Path: "/items/{{id}}", Body: `{"note": "{{token}}"}`},
	}}
	c := NewClient(&Target{URL: u}, 5*time.Second)
	defer c.Close()
	var steps []StepTime
	if err := sc.runSession(context.Background(), c, 1, func(s StepTime) { steps = append(steps, s) }); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 || !strings.HasPrefix(seen[0], "POST /login?u=bob") || !strings.HasPrefix(seen[2],
		`POST /items/a%20b/c  {"note": "tok en"}`) {
		t.Errorf("%d steps; requests %q", len(steps), seen)
	}
	// A value that is not there fails the session at its step.
	sc.Steps[1].Extract[0].JSON = []any{"missing"}
	if err := sc.runSession(context.Background(), c, 0, func(StepTime) {}); err == nil || !strings.Contains(err.Error(), "s/list") {
		t.Errorf("missing value: %v", err)
	}
}

// The engine starts sessions on schedule whatever their latency: a server
// that takes 200 ms a request still gets 20 sessions a second started,
// and about 4 in flight (Little's law).
func TestArrivalLoadKeepsTheSchedule(t *testing.T) {
	target, calls := slowTarget(t, 200*time.Millisecond)
	l := &ArrivalLoad{Target: target, Rates: result.Rates{Steps: []float64{20, 40}, Each: 2 * time.Second},
		Mix: []Flow{{Name: "get", Weight: 1, Scenario: &Scenario{Name: "get", Steps: []Step{{Name: "get", Method: "GET", Path: "/"}}}}}}
	run, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Windows) != 2 || run.Ended != "" {
		t.Fatalf("%d windows, ended %q", len(run.Windows), run.Ended)
	}
	w := run.Windows[0]
	if w.Started != 40 || w.Failed != 0 || w.Latency.TotalCount() != 40 {
		t.Errorf("first window: %d started, %d failed, %d timed", w.Started, w.Failed, w.Latency.TotalCount())
	}
	if w.InFlightMean < 2.5 || w.InFlightMean > 5.5 {
		t.Errorf("in flight %.1f, want about 20/s × 0.2 s = 4", w.InFlightMean)
	}
	if got := run.Windows[1].Started; got != 80 {
		t.Errorf("second window started %d, want 80", got)
	}
	if calls.Load() != 120 {
		t.Errorf("%d calls", calls.Load())
	}
}

// Stop ends the run after a window; Ctrl-C ends it with what was measured.
func TestArrivalLoadStops(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	flow := []Flow{{Name: "get", Weight: 1, Scenario: &Scenario{Name: "get", Steps: []Step{{Name: "get", Method: "GET", Path: "/"}}}}}
	l := &ArrivalLoad{Target: &Target{URL: u}, Rates: result.Rates{Steps: []float64{10, 20, 30}, Each: time.Second}, Mix: flow,
		Stop: func(ws []result.WindowStats) string {
			if len(ws) == 1 {
				return "stopped: enough"
			}
			return ""
		}}
	run, err := l.Run(context.Background())
	if err != nil || run.Ended != "stopped: enough" || len(run.Windows) != 1 {
		t.Errorf("%v, ended %q after %d windows", err, run.Ended, len(run.Windows))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	l.Stop = nil
	run, err = l.Run(ctx)
	if err != nil || run.Ended == "" || run.Windows[0].Started == 0 {
		t.Errorf("%v, ended %q", err, run.Ended)
	}
}

// A weighted mix runs scenarios and microloads side by side in the
// proportions of their weights, in every window.
func TestArrivalLoadMix(t *testing.T) {
	var scen, micro atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/s" {
			scen.Add(1)
		} else {
			micro.Add(1)
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	l := &ArrivalLoad{Target: &Target{URL: u}, Rates: result.Rates{Steps: []float64{100, 200}, Each: time.Second},
		Mix: []Flow{
			{Name: "s", Weight: 3, Scenario: &Scenario{Name: "s", Steps: []Step{{Name: "a", Method: "GET", Path: "/s"}}}},
			{Name: "m", Weight: 1, Microload: &HTTP{Method: "GET", Path: "/m"}},
		}}
	run, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, m := scen.Load(), micro.Load()
	if s+m < 290 || s < 2*m || s > 4*m {
		t.Errorf("%d scenario sessions and %d microload calls, want about 3 to 1 of 300", s, m)
	}
	for _, w := range run.Windows {
		if w.Steps["s/a"].TotalCount() == 0 || w.Steps["m"].TotalCount() == 0 {
			t.Errorf("window %v: steps %d and %d", w.Window, w.Steps["s/a"].TotalCount(), w.Steps["m"].TotalCount())
		}
	}
}

// A value is extracted from the decoded reply every time, also when the
// same compressed bytes came before (a check's verdict is cached by the
// bytes; the body a scenario reads is not).
func TestScenarioExtractsFromRepeatedGzip(t *testing.T) {
	var zipped bytes.Buffer
	var opened atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/notes/a.md" {
			opened.Add(1)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(zipped.Bytes())
	}))
	defer srv.Close()
	// The sitemap names the target's own URLs (another host's would fail
	// the session). Long enough to be compressed, not stored: the gzip
	// bytes must not hold the text.
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(`<urlset><url><loc>` + srv.URL + `/notes/a.md</loc></url>` + strings.Repeat(`<url><loc>`+srv.URL+`/notes/b.md</loc></url>`, 50) + `</urlset>`))
	zw.Close()
	u, _ := url.Parse(srv.URL)
	re := regexp.MustCompile(`<loc>([^<]+)</loc>`)
	sc := &Scenario{Name: "s", Steps: []Step{
		{Name: "sitemap", Method: "GET", Path: "/sitemap.xml", Extract: []Extract{{Name: "note", Regexp: re}}},
		{Name: "note", Method: "GET", Path: "{{note}}"},
	}}
	c := NewClient(&Target{URL: u, Header: []h1.Field{{Name: "Accept-Encoding", Value: "gzip"}}}, 5*time.Second)
	defer c.Close()
	for n := range 3 {
		if err := sc.runSession(context.Background(), c, n, func(StepTime) {}); err != nil {
			t.Fatalf("session %d: %v", n, err)
		}
	}
	if opened.Load() != 3 {
		t.Errorf("the note was opened %d times, want 3", opened.Load())
	}
}
