package probes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/h1/h1test"
	"github.com/probehq/probe/result"
)

// wireServer is a raw TCP server that keeps the exact bytes it receives
// and answers each request (a header block; a body per its Content-Length)
// with reply(path).
type wireServer struct {
	url *url.URL
	got h1test.Received
}

func newWireServer(t testing.TB, reply func(path string) (header, body string)) *wireServer {
	s := &wireServer{}
	s.url = &url.URL{Scheme: "http", Host: h1test.ServeConns(t, func(c net.Conn) { s.serve(c, reply) })}
	return s
}

func (s *wireServer) serve(c net.Conn, reply func(path string) (header, body string)) {
	br := bufio.NewReader(io.TeeReader(c, &s.got))
	for {
		var path string
		length := 0
		for first := true; ; first = false {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if first {
				if f := strings.Fields(line); len(f) > 1 {
					path = f[1]
				}
			}
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if strings.TrimSpace(line) == "" {
				break
			}
		}
		io.ReadFull(br, make([]byte, length))
		h, b := reply(path)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s", h, len(b), b)
	}
}

func (s *wireServer) received() string { return s.got.String() }

// requestLines are the request lines the server received.
func (s *wireServer) requestLines() []string {
	var out []string
	for _, l := range strings.Split(s.received(), "\r\n") {
		if strings.HasSuffix(l, " HTTP/1.1") {
			out = append(out, l)
		}
	}
	return out
}

// listThenOpen is a scenario that lists, takes field name of the list's
// JSON reply as {{name}}, and opens path with it.
func listThenOpen(name, path string, header ...h1Field) *Scenario {
	return &Scenario{Name: "s", Steps: []Step{
		{Name: "list", Method: "GET", Path: "/list", Extract: []Extract{{Name: name, JSON: []any{name}}}},
		{Name: "open", Method: "GET", Path: path, Header: header},
	}}
}

// wantOpened runs one session of sc against s and wants it to end well
// with want as the second request line, the open step's.
func wantOpened(t *testing.T, s *wireServer, sc *Scenario, want string) {
	t.Helper()
	if err := runOnce(t, s, sc); err != nil {
		t.Fatal(err)
	}
	if lines := s.requestLines(); len(lines) != 2 || lines[1] != want {
		t.Errorf("requests %q", lines)
	}
}

const smuggle = "ok\r\nX-Injected: 1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x"

// runOnce runs one session of sc against s and returns its error.
func runOnce(t *testing.T, s *wireServer, sc *Scenario) error {
	t.Helper()
	c := NewClient(&Target{URL: s.url}, 5*time.Second)
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		done <- sc.runSession(context.Background(), c, 0, func(StepTime) {})
	}()
	select {
	case err := <-done:
		time.Sleep(20 * time.Millisecond) // what was sent has arrived
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
		return nil
	}
}

// Try 3: a value from a reply that holds CR LF, put into a header, would
// inject a header and a whole second request. Nothing of that step is
// sent, and the error names the value and where it came from.
func TestValueFromAReplyCannotSplitARequest(t *testing.T) {
	s := newWireServer(t, func(path string) (string, string) {
		return "", fmt.Sprintf(`{"token": %q}`, smuggle)
	})
	sc := &Scenario{Name: "s", Steps: []Step{
		{Name: "auth", Method: "GET", Path: "/auth", Extract: []Extract{{Name: "token", JSON: []any{"token"}}}},
		{Name: "login", Method: "GET", Path: "/login", Header: []h1Field{{Name: "X-Token", Value: "{{token}}"}}},
	}}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	err := runOnce(t, s, sc)
	want := "s/login: not sent: {{token}} from the reply of step auth holds a CR LF (header X-Token)"
	if err == nil || err.Error() != want {
		t.Errorf("session: %v\nwant %s", err, want)
	}
	got := s.received()
	if lines := s.requestLines(); len(lines) != 1 || strings.Contains(got, "X-Injected") || strings.Contains(got, "smuggled") {
		t.Errorf("the server received %q", got)
	}
}

// Try 10: CR LF in the file's own values or method is the file's error,
// told before the run; a scenario run without that check still sends
// nothing of it (the HTTP/1 client refuses).
func TestFileValuesAndMethodCannotSplitARequest(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		sc         *Scenario
	}{
		{"a value in a header", "step login: header X-User: values.user[1] holds a CR LF", &Scenario{Name: "s",
			Values: map[string][]string{"user": {"ann", smuggle}},
			Steps:  []Step{{Name: "login", Method: "GET", Path: "/login", Header: []h1Field{{Name: "X-User", Value: "u={{user}}"}}}}}},
		{"the method", `step login: method "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET" is not a token: a space`, &Scenario{Name: "s",
			Steps: []Step{{Name: "login", Method: "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET", Path: "/smuggled"}}}},
		{"a header's own text", "step login: header X-A holds a CR LF", &Scenario{Name: "s",
			Steps: []Step{{Name: "login", Method: "GET", Path: "/", Header: []h1Field{{Name: "X-A", Value: smuggle}}}}}},
		{"a header name", `step login: header name "X-A: 1\r\nX-B" is not a token: ':'`, &Scenario{Name: "s",
			Steps: []Step{{Name: "login", Method: "GET", Path: "/", Header: []h1Field{{Name: "X-A: 1\r\nX-B", Value: "2"}}}}}},
		{"the path", `step login: path "/a HTTP/1.1\r\nHost: x\r\n\r\nGET /smuggled" holds a space`, &Scenario{Name: "s",
			Steps: []Step{{Name: "login", Method: "GET", Path: "/a HTTP/1.1\r\nHost: x\r\n\r\nGET /smuggled"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.sc.Validate(); err == nil || err.Error() != "scenario s: "+tc.want {
				t.Errorf("Validate: %v\nwant scenario s: %s", err, tc.want)
			}
			s := newWireServer(t, func(string) (string, string) { return "", "ok" })
			n := 1 // the session the bad value falls to
			if len(tc.sc.Values["user"]) == 0 {
				n = 0
			}
			c := NewClient(&Target{URL: s.url}, 5*time.Second)
			defer c.Close()
			err := tc.sc.runSession(context.Background(), c, n, func(StepTime) {})
			time.Sleep(20 * time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), "not sent") {
				t.Errorf("session: %v, want not sent", err)
			}
			if got := s.received(); got != "" {
				t.Errorf("the server received %q", got)
			}
		})
	}
}

// Try 2: a value of exactly http:// (and other URLs that are not the
// target's) as a step's whole path fails the session with a reason: no
// panic, and nothing sent for that step.
func TestURLValuesAreTheTargetsOrRefused(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"http://", "is a URL of another origin (http: with no host), not the target's"},
		{"https://", "is a URL of another origin (https: with no host), not the target's"},
		{"http://x", "is a URL of another origin (http://x), not the target's"},
		{"http://evil.example/admin", "is a URL of another origin (http://evil.example), not the target's"},
		{"//evil.example/admin", "is a URL of another origin (//evil.example), not the target's"},
		{"https://TARGET/admin", "is a URL of another origin (https://TARGET), not the target's"},
		{"javascript:alert(1)", "is not a path or a URL"},
		{"http://TARGET/../admin", "holds a dot segment"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			var s *wireServer
			s = newWireServer(t, func(string) (string, string) {
				return "", fmt.Sprintf(`{"link": %q}`, strings.ReplaceAll(tc.value, "TARGET", s.url.Host))
			})
			err := runOnce(t, s, listThenOpen("link", "{{link}}"))
			if err == nil || !strings.Contains(err.Error(), "s/open: not sent: {{link}} from the reply of step list ") ||
				!strings.Contains(strings.ReplaceAll(err.Error(), s.url.Host, "TARGET"), tc.want) {
				t.Errorf("session: %v\nwant …%s", err, tc.want)
			}
			if lines := s.requestLines(); len(lines) != 1 {
				t.Errorf("requests %q", lines)
			}
		})
	}
}

// A URL of the target itself becomes its path (and query), as a sitemap's
// links do.
func TestURLValuesOfTheTargetBecomePaths(t *testing.T) {
	var s *wireServer
	s = newWireServer(t, func(path string) (string, string) {
		return "", fmt.Sprintf(`{"link": "http://%s/notes/caf%%C3%%A9?x=1 2#top"}`, s.url.Host)
	})
	wantOpened(t, s, listThenOpen("link", "{{link}}"), "GET /notes/caf%C3%A9?x=1%202 HTTP/1.1")
}

// Try 4: a value put after the file's path prefix cannot climb out of it:
// dot segments, encoded ones, backslashes fail the session.
func TestPathValuesCannotClimbOutOfThePrefix(t *testing.T) {
	for _, v := range []string{"../../admin/secret", "..", "a/../../admin", "%2e%2e/admin", "%2E%2E%2Fadmin", ".%2e/admin",
		"%252e%252e/admin", `..\admin`, `a\b`, "./x"} {
		t.Run(v, func(t *testing.T) {
			s := newWireServer(t, func(string) (string, string) { return "", fmt.Sprintf(`{"id": %q}`, v) })
			err := runOnce(t, s, listThenOpen("id", "/items/{{id}}", h1Field{Name: "Authorization", Value: "Bearer secret"}))
			if err == nil || !strings.HasPrefix(err.Error(), "s/open: not sent: {{id}} from the reply of step list holds a ") {
				t.Errorf("session: %v", err)
			}
			if lines := s.requestLines(); len(lines) != 1 {
				t.Errorf("requests %q", lines)
			}
		})
	}
	// What stays inside is sent, escaped as before; a value after the '?'
	// is query text, not confined.
	s := newWireServer(t, func(string) (string, string) { return "", `{"id": "a..b/c.d/..."}` })
	wantOpened(t, s, listThenOpen("id", "/items/{{id}}.json?from={{id}}"), "GET /items/a..b/c.d/....json?from=a..b/c.d/... HTTP/1.1")
}

type h1Field = h1.Field

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// bigJSON is a JSON array of about size bytes: objects with an id and
// some text.
func bigJSON(size int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"n%d","tags":["a","b",%d],"text":"%s"}`, i, i, strings.Repeat("x", 40))
	}
	b.WriteByte(']')
	return b.Bytes()
}

// rssBytes is the process's resident set now (VmRSS).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// peakSampler records the most of the resident set and of the heap in use
// while it runs.
type peakSampler struct {
	rss, heap atomic.Int64
	stop      chan struct{}
	done      sync.WaitGroup
}

func samplePeaks(limit int64, over func()) *peakSampler {
	p := &peakSampler{stop: make(chan struct{})}
	p.done.Go(func() {
		var ms runtime.MemStats
		for i := 0; ; i++ {
			if r := rssBytes(); r > p.rss.Load() {
				p.rss.Store(r)
				if r > limit && over != nil {
					over() // stop the run: past the bound is a failure already
					over = nil
				}
			}
			if i%10 == 0 {
				runtime.ReadMemStats(&ms)
				p.heap.Store(max(p.heap.Load(), int64(ms.HeapInuse)))
			}
			select {
			case <-p.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return p
}

func (p *peakSampler) end() { close(p.stop); p.done.Wait() }

// Try 1: sessions of a ramp extract one value from a 30 MB reply (under
// --max-body), 32 in flight at once. Before, each extraction decoded the
// whole reply into a tree of about 30 times its size, outside the reply
// budget: 21.5 GB. Now the replies are held within the one budget the
// ramp's clients share, and the value is found in a streaming pass that
// holds nothing the size of the reply. The figure is in docs/BENCHMARKS.md:
//
//	go test ./probes -run '^TestExtractionFromLargeRepliesIsBounded$' -count 1 -v
func TestExtractionFromLargeRepliesIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("32 sessions of 30 MB replies (a few seconds)")
	}
	sessions := 32
	if n, err := strconv.Atoi(os.Getenv("PROBE_EXTRACT_SESSIONS")); err == nil {
		sessions = n // fewer, to see the code before the bound fail without taking the machine
	}
	const maxRSS = 300 << 20
	body := bigJSON(30 << 20)
	var arrived atomic.Int64
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			w.Write([]byte("ok"))
			return
		}
		// Every session's reply in flight at once.
		if arrived.Add(1) >= int64(sessions) {
			once.Do(func() { close(release) })
		}
		select {
		case <-release:
		case <-time.After(3 * time.Second):
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	sc := &Scenario{Name: "s", Steps: []Step{
		{Name: "list", Method: "GET", Path: "/big",
			Extract: []Extract{{Name: "first", JSON: []any{0, "id"}}, {Name: "second", JSON: []any{1, "tags", 2}}}},
		{Name: "open", Method: "GET", Path: "/items/{{first}}?n={{second}}"},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runtime.GC()
	before := rssBytes()
	peaks := samplePeaks(maxRSS, cancel)
	l := &ArrivalLoad{Target: &Target{URL: u}, Rates: result.Rates{Steps: []float64{float64(sessions)}, Each: time.Second},
		MaxInFlight: sessions, Timeout: 20 * time.Second,
		Mix: []Flow{{Name: "s", Weight: 1, Scenario: sc}}}
	run, err := l.Run(ctx)
	peaks.end()
	if err != nil {
		t.Fatal(err)
	}
	w := run.Windows[0]
	t.Logf("%d sessions on a %d MB reply: peak RSS %d MB (%d MB before the run), peak heap in use %d MB; %d completed, %d failed: %v",
		sessions, len(body)>>20, peaks.rss.Load()>>20, before>>20, peaks.heap.Load()>>20, w.Completed, w.Failed, w.Errors)
	if peaks.rss.Load() > maxRSS {
		t.Errorf("peak RSS %d MB, want under %d MB", peaks.rss.Load()>>20, maxRSS>>20)
	}
	if w.Completed == 0 {
		t.Errorf("no session extracted its values: %v", w.Errors)
	}
	for reason := range w.Errors {
		if !strings.Contains(reason, "--reply-memory") {
			t.Errorf("a session failed other than on the reply budget: %s", reason)
		}
	}
}

// A ramp told to stop (SIGTERM, Ctrl-C: its context ends) stops now, also
// with sessions waiting for a reply that comes slowly: the requests in
// flight are interrupted, not waited for until their timeout.
func TestRampStopsPromptlyMidReply(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(30<<20))
		for range 3000 {
			if _, err := w.Write([]byte(strings.Repeat(" ", 1024))); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	sc := &Scenario{Name: "s", Steps: []Step{{Name: "list", Method: "GET", Path: "/", Extract: []Extract{{Name: "x", JSON: []any{0}}}}}}
	l := &ArrivalLoad{Target: &Target{URL: u}, Rates: result.Rates{Steps: []float64{8}, Each: 10 * time.Second}, Timeout: 30 * time.Second,
		Mix: []Flow{{Name: "s", Weight: 1, Scenario: sc}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := l.Run(ctx); done <- err }()
	time.Sleep(700 * time.Millisecond) // a few sessions reading
	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(stopped); d > time.Second {
			t.Errorf("the ramp took %v to stop", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the ramp did not stop within 5 s of its context's end")
	}
}

// A method or header given on the command line that the HTTP/1 client
// would refuse is an error before the run, not one per request.
func TestHTTPMicroloadRefusesWhatIsNotHTTP(t *testing.T) {
	target := &Target{URL: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}}
	for _, l := range []*HTTP{
		{Method: "GET /x HTTP/1.1\r\n", Path: "/"},
		{Path: "/", Header: []h1.Field{{Name: "X-A", Value: "a\r\nX-B: b"}}},
		{Path: "/", Header: []h1.Field{{Name: "X A", Value: "a"}}},
	} {
		if err := l.Prepare(context.Background(), target, nil); err == nil {
			t.Errorf("%+v: no error", l)
		}
	}
	if err := (&HTTP{Method: "PATCH", Path: "/", Header: []h1.Field{{Name: "X-A", Value: "a\tb"}}}).Prepare(context.Background(),
		target, nil); err != nil {
		t.Error(err)
	}
}
