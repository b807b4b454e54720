package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv("PROBE_TEST_DIE_AFTER")); err == nil {
		serveThenDie(n) // a target that dies mid-run, in its own process
		return
	}
	os.Exit(m.Run())
}

// startServeThenDie starts this test binary as a target that serves n
// requests and dies (serveThenDie); it is stopped when the test ends.
func startServeThenDie(t *testing.T, n int) *target.Child {
	t.Helper()
	child, err := target.Start(context.Background(), target.ChildSpec{Argv: []string{os.Args[0], "-test.run=^$"},
		Env: []string{"PROBE_TEST_DIE_AFTER=" + strconv.Itoa(n)}, Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Stop() })
	return child
}

func serveThenDie(n int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(2)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	var served atomic.Int64
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == int64(n) {
			fmt.Fprintln(os.Stderr, "panic: served enough")
			os.Exit(2)
		}
		w.Write([]byte("ok"))
	}))
}

func targetOf(t *testing.T, srv *httptest.Server) *Target {
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &Target{URL: u}
}

// loadRoot runs the load of GET / on tg as o says; the test ends on an
// error.
func loadRoot(t *testing.T, tg *Target, o LoadOptions) *result.Run {
	t.Helper()
	run, err := RunLoad(context.Background(), &HTTP{Path: "/"}, tg, o)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// countingServer counts the connections it accepts.
func countingServer(h http.Handler) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	return srv, &conns
}

// The correction for coordinated omission, on a made-up timeline: one
// client at 200 requests a second; every reply takes 1 ms except one that
// takes a second. The sends due during the stall wait behind it, and that
// wait must show in the latencies, not in the service times.
func TestCoordinatedOmissionModel(t *testing.T) {
	sched := openLoop{start: time.Unix(1000, 0), interval: 5 * time.Millisecond}
	rec := &opRecord{onTime: newHistBatch(result.NewHistogram())}
	free := sched.start // when the client can send next
	for k := int64(0); k < 600; k++ {
		due := sched.due(k)
		sent := due
		if free.After(sent) {
			sent = free
		}
		service := time.Millisecond
		if k == 100 {
			service = time.Second
		}
		done := sent.Add(service)
		rec.record(due, sent, done)
		free = done
	}
	op := &result.OpStats{Latency: result.NewHistogram(), Service: result.NewHistogram()}
	rec.mergeTo(op)
	// 200 sends were due during the stall, a third of the run: the
	// corrected p99 is most of the second, the service p99 a millisecond.
	if p99 := op.Latency.ValueAtQuantile(99); p99 < 900_000 {
		t.Errorf("corrected p99 %d µs: the stall is missing from the percentiles", p99)
	}
	if p50 := op.Latency.ValueAtQuantile(50); p50 > 2_000 {
		t.Errorf("corrected p50 %d µs: the client caught up after the stall", p50)
	}
	if p99 := op.Service.ValueAtQuantile(99); p99 > 1_100 {
		t.Errorf("service-time p99 %d µs: only one request was slow on the server", p99)
	}
	if op.Service.Max() < 999_000 || op.Calls != 600 {
		t.Errorf("service max %d µs over %d calls", op.Service.Max(), op.Calls)
	}
}

// slowTarget is a server that answers "ok" after d, every request, until
// the test ends: its target, and the requests it got.
func slowTarget(t *testing.T, d time.Duration) (*Target, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(d)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return targetOf(t, srv), &n
}

// stallOnce runs an open loop of 200 requests a second for 2 s against a
// server that answers at once but stalls d on its nth request: the run,
// and the requests the server got.
func stallOnce(t *testing.T, nth int64, d time.Duration) (*result.Run, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == nth {
			time.Sleep(d)
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	run := loadRoot(t, targetOf(t, srv), LoadOptions{Concurrency: 1, Rate: 200, Duration: 2 * time.Second})
	return run, &n
}

// The same against a real server that stalls once, on its 50th request:
// the bounds only ever grow on a busy machine.
func TestCoordinatedOmissionCorrection(t *testing.T) {
	run, n := stallOnce(t, 50, time.Second)
	if _, errs := run.Requests(); errs != 0 || n.Load() < 50 {
		t.Fatalf("%d requests, %d errors", n.Load(), errs)
	}
	op := run.Ops[0]
	if op.Latency.Max() < 900_000 || op.Service.Max() < 900_000 {
		t.Errorf("max latency %d µs, max service time %d µs: the stalled request was not seen", op.Latency.Max(), op.Service.Max())
	}
	// The sends due during the stall count their wait; the service times
	// of those sends do not.
	if op.Latency.TotalCount() < 50 || op.Latency.Mean() <= op.Service.Mean() {
		t.Errorf("corrected mean %.0f µs, service mean %.0f µs over %d calls", op.Latency.Mean(), op.Service.Mean(), op.Latency.TotalCount())
	}
}

func TestOpenLoopSaysWhenRateIsNotKept(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
	}))
	defer srv.Close()
	// One client at 20 ms a request can send 50/s, not 500/s.
	run := loadRoot(t, targetOf(t, srv), LoadOptions{Concurrency: 1, Rate: 500, Duration: time.Second})
	if !hasWarning(run, "rate-not-kept") {
		t.Errorf("warnings %v: want rate-not-kept", run.Warnings)
	}
}

func hasWarning(run *result.Run, kind string) bool {
	for _, w := range run.Warnings {
		if w.Kind == kind {
			return true
		}
	}
	return false
}

func TestOneConnectionPerClient(t *testing.T) {
	srv, conns := countingServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello")) }))
	defer srv.Close()
	run := loadRoot(t, targetOf(t, srv), LoadOptions{Concurrency: 4, Requests: 200, Duration: time.Minute})
	calls, _ := run.Requests()
	if calls < 100 {
		t.Fatalf("only %d calls", calls)
	}
	if run.ConnsOpened != 4 || conns.Load() != 4 {
		t.Errorf("connections: probe counted %d, server accepted %d; want 4 for 4 clients", run.ConnsOpened, conns.Load())
	}
	if hasWarning(run, "connection-churn") {
		t.Error("churn warning without churn")
	}
}

func TestConnectionChurnIsReported(t *testing.T) {
	srv, conns := countingServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Write([]byte("bye"))
	}))
	defer srv.Close()
	run := loadRoot(t, targetOf(t, srv), LoadOptions{Concurrency: 2, Duration: 300 * time.Millisecond})
	calls, errs := run.Requests()
	if errs != 0 || int64(run.ConnsOpened) < calls || conns.Load() < calls {
		t.Errorf("%d calls, %d errors, %d connections opened (server saw %d)", calls, errs, run.ConnsOpened, conns.Load())
	}
	if !hasWarning(run, "connection-churn") {
		t.Errorf("warnings %v", run.Warnings)
	}
	// Connections probe closes after failed replies are no claim about the
	// target's keep-alive.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		w.Write([]byte("short"))
	}))
	defer bad.Close()
	run = loadRoot(t, targetOf(t, bad), LoadOptions{Concurrency: 2, Duration: 300 * time.Millisecond})
	if calls, errs := run.Requests(); errs == 0 || run.ConnsOpened < int(calls)/2 || hasWarning(run, "connection-churn") {
		t.Errorf("short replies: %d calls, %d errors, %d connections, warnings %v", calls, errs, run.ConnsOpened, run.Warnings)
	}
}

func TestReplyDigestsPerKey(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("k") == "varies" {
			fmt.Fprintf(w, "reply %d", n.Add(1))
			return
		}
		fmt.Fprintf(w, "same for %s", r.URL.Query().Get("k"))
	}))
	defer srv.Close()
	run, err := RunLoad(context.Background(), &HTTP{Path: "/x", Param: "k", Values: []string{"a", "b", "varies"}},
		targetOf(t, srv), LoadOptions{Concurrency: 2, Requests: 90, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]result.Digest{}
	for _, d := range run.Digests {
		got[d.Key] = d
	}
	if got["/x?k=a"].Distinct != 1 || got["/x?k=b"].Distinct != 1 || got["/x?k=a"].Requests < 10 {
		t.Errorf("invariant keys: %+v", run.Digests)
	}
	if d := got["/x?k=varies"]; d.Distinct != int(d.Requests) || d.Requests < 10 {
		t.Errorf("varying key: %+v", d)
	}
	// Every measured reply is counted once: the counts a client keeps of
	// its last digest are all in the run's.
	var counted int64
	for _, d := range run.Digests {
		counted += d.Requests
	}
	if calls, errs := run.Requests(); errs != 0 || counted != calls {
		t.Errorf("%d replies in the digests of %d calls (%d errors)", counted, calls, errs)
	}
}

// Without a warmup the first request is measured, however fast its reply:
// a target that fails after its first reply has answered once.
func TestNoWarmupMeasuresTheFirstReply(t *testing.T) {
	for range 5 {
		var served atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if served.Add(1) > 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		run, err := RunLoad(context.Background(), &HTTP{Path: "/"}, targetOf(t, srv),
			LoadOptions{Concurrency: 1, Requests: 5, Duration: time.Minute})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if calls, errors := run.Requests(); calls-errors != 1 {
			t.Fatalf("%d calls, %d failed: want the first one measured and good", calls, errors)
		}
	}
}

func TestInterruptKeepsWhatWasMeasured(t *testing.T) {
	// Ctrl-C 400 ms after the first request, however long the start took
	// on a busy machine.
	ctx, cancel := context.WithCancel(context.Background())
	var first sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first.Do(func() { time.AfterFunc(400*time.Millisecond, cancel) })
		time.Sleep(time.Millisecond)
	}))
	defer srv.Close()
	began := time.Now()
	run, err := RunLoad(ctx, &HTTP{Path: "/"}, targetOf(t, srv), LoadOptions{Concurrency: 2, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(began) > 10*time.Second {
		t.Errorf("the run took %s to stop", time.Since(began))
	}
	calls, _ := run.Requests()
	if run.Ended != "interrupted" || calls == 0 || run.Duration <= 0 || run.Duration > 5*time.Second {
		t.Errorf("ended %q, %d calls over %s", run.Ended, calls, run.Duration)
	}
	if !hasWarning(run, "interrupted") {
		t.Errorf("warnings %v", run.Warnings)
	}
}

func TestInterruptUnblocksStalledRequests(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	began := time.Now()
	if _, err := RunLoad(ctx, &HTTP{Path: "/"}, targetOf(t, srv), LoadOptions{Concurrency: 2, Duration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("a stalled target held the interrupted run for %s", d)
	}
}

func TestTargetDyingMidRun(t *testing.T) {
	child := startServeThenDie(t, 300)
	u, _ := url.Parse(child.URL)
	run := loadRoot(t, &Target{URL: u, Child: child}, LoadOptions{Concurrency: 2, Duration: 30 * time.Second})
	calls, _ := run.Requests()
	// The target dies at its 300th request: a loaded machine may have
	// counted a few dozen fewer as measured by then (and the calls sent
	// until the death was seen count too, as failed calls).
	if !strings.Contains(run.Ended, "target exited") || !strings.Contains(run.Ended, "panic: served enough") || calls < 150 {
		t.Errorf("ended %q after %d calls", run.Ended, calls)
	}
	if !hasWarning(run, "target-exited") {
		t.Errorf("warnings %v", run.Warnings)
	}
	if run.TargetExit == nil || !strings.Contains(run.TargetExit.Stderr, "panic: served enough") {
		t.Errorf("target exit: %+v", run.TargetExit)
	}
	if run.TargetProc == nil || run.TargetProc.Samples == 0 {
		t.Errorf("target process not sampled: %+v", run.TargetProc)
	}
}

func TestTimeoutsAreCounted(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	run := loadRoot(t, targetOf(t, srv), LoadOptions{Concurrency: 1, Duration: 700 * time.Millisecond, Timeout: 200 * time.Millisecond})
	if run.Errors["timeout"] < 2 {
		t.Errorf("errors %v: want the requests that outlived the timeout counted as timeouts", run.Errors)
	}
}

// A target given by URL that runs on this machine is found by its socket:
// its process figures are reported as a child's would be.
func TestLocalTargetFoundByItsSocket(t *testing.T) {
	child := startServeThenDie(t, 100000000)
	if l, err := target.FindListener(strings.TrimPrefix(child.URL, "http://")); err != nil || l.PID != child.PID() {
		t.Fatalf("FindListener: %d, %v; want %d", l.PID, err, child.PID())
	}
	u, _ := url.Parse(child.URL)
	run := loadRoot(t, &Target{URL: u}, LoadOptions{Concurrency: 2, Duration: 500 * time.Millisecond})
	if run.TargetProc == nil || run.TargetProc.PID != child.PID() || run.TargetProc.MaxRSS == 0 || hasWarning(run, "target-unseen") {
		t.Errorf("target process %+v, warnings %v", run.TargetProc, run.Warnings)
	}
	// A server in probe's own process (or another machine's) cannot be
	// told apart from probe: said, not guessed.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	run = loadRoot(t, targetOf(t, srv), LoadOptions{Concurrency: 1, Duration: 200 * time.Millisecond})
	if run.TargetProc != nil || !hasWarning(run, "target-unseen") {
		t.Errorf("an in-process server: %+v, %v", run.TargetProc, run.Warnings)
	}
	if _, err := target.FindListener("192.0.2.1:80"); err == nil || !strings.Contains(err.Error(), "not an address of this machine") {
		t.Errorf("another host: %v", err)
	}
}

// TestRequestsEndsTheRun: a run of one request sends exactly one, waits for
// its slow reply and measures it, however many clients there are and
// however long their set-up takes (a 1 ms window once sent none on a busy
// machine, and probe all took a 1.2 s endpoint for a fast one).
func TestRequestsEndsTheRun(t *testing.T) {
	target, served := slowTarget(t, 300*time.Millisecond)
	for _, clients := range []int{1, 4} {
		served.Store(0)
		run := loadRoot(t, target, LoadOptions{Concurrency: clients, Requests: 1, Duration: time.Minute})
		calls, errors := run.Requests()
		if calls != 1 || errors != 0 || served.Load() != 1 {
			t.Fatalf("%d clients: %d calls, %d failed, %d served: want one", clients, calls, errors, served.Load())
		}
		if p50 := time.Duration(run.Latency().ValueAtQuantile(50)) * time.Microsecond; p50 < 300*time.Millisecond {
			t.Errorf("%d clients: the one reply measured %v, the server took 300 ms", clients, p50)
		}
		if run.Duration > 10*time.Second {
			t.Errorf("%d clients: the run lasted %v: the request should have ended it", clients, run.Duration)
		}
	}
}
