package pipeline

import (
	"context"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/internal/testservers/selfserve"
	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// With PIPELINE_SLOW_SERVE set, the test binary is a server of its own
// process (its CPU is its own, as a real target's): /burn?ms=N burns N ms
// of CPU a request (/costly twice that while its CPU is profiled), /queue?ms=N the same one request at a time (a request
// its client gave up on is dropped), /block never answers and uses no
// CPU, /spawn?ms=N has a child process burn N ms; /debug/pprof/ serves.
func init() {
	if os.Getenv("PIPELINE_SLOW_SERVE") == "" {
		return
	}
	if ms := os.Getenv("PIPELINE_SLOW_BURN"); ms != "" { // a /spawn child
		n, _ := strconv.Atoi(ms)
		burn(time.Duration(n) * time.Millisecond)
		os.Exit(0)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on http://%s\n", l.Addr())
	cost := func(r *http.Request) time.Duration {
		n, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		return time.Duration(n) * time.Millisecond
	}
	var one sync.Mutex
	http.HandleFunc("/burn", func(w http.ResponseWriter, r *http.Request) { burn(cost(r)) })
	http.HandleFunc("/queue", func(w http.ResponseWriter, r *http.Request) {
		one.Lock()
		defer one.Unlock()
		if r.Context().Err() == nil {
			burn(cost(r))
		}
	})
	http.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	http.HandleFunc("/spawn", func(w http.ResponseWriter, r *http.Request) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "PIPELINE_SLOW_BURN="+strconv.Itoa(int(cost(r)/time.Millisecond)))
		if err := cmd.Run(); err != nil {
			http.Error(w, err.Error(), 500)
		}
	})
	// /costly burns twice its cost while a CPU profile is being taken: a
	// target whose profiling is dear (ProfilingCost must see it).
	var profiling atomic.Int32
	http.HandleFunc("/costly", func(w http.ResponseWriter, r *http.Request) {
		burn(cost(r))
		if profiling.Load() > 0 {
			burn(cost(r))
		}
	})
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/profile" {
			profiling.Add(1)
			defer profiling.Add(-1)
		}
		http.DefaultServeMux.ServeHTTP(w, r)
	}))
	os.Exit(0)
}

var burnSink uint64

// burn spends d of this thread's CPU: a cost in CPU, whatever else runs.
func burn(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	threadCPU := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for start := threadCPU(); threadCPU()-start < d; {
		for i := 0; i < 100_000; i++ {
			burnSink += uint64(i)
		}
	}
}

// slowServer starts the test binary as a server on one CPU (GOMAXPROCS=1:
// a bound on the CPU these tests take from the machine) and stops it when
// the test ends.
func slowServer(t *testing.T) *url.URL {
	t.Helper()
	u, _, _ := selfserve.Start(t, "PIPELINE_SLOW_SERVE=1", "GOMAXPROCS=1")
	return u
}

func measureHTTP(t *testing.T, u *url.URL, path string, o probes.LoadOptions) *report.Run {
	t.Helper()
	rep, _ := measureRun(t, u, path, o)
	return rep
}

func measureRun(t *testing.T, u *url.URL, path string, o probes.LoadOptions) (*report.Run, *result.Run) {
	t.Helper()
	rep, run, err := New(Options{}).Measure(context.Background(), "x", &probes.HTTP{Path: path}, &probes.Target{URL: u}, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep, run
}

func warning(rep *report.Run, kind string) string { return warningIn(rep.Warnings, kind) }

var suggested = regexp.MustCompile(`--concurrency (\d+), or a longer --timeout`)

// An endpoint that costs more CPU than the timeout allows at 32 clients is
// slow, not a crash: the warning says how busy the target was and the
// concurrency that would measure it; the run's CPU figures are over the
// window they were measured in (a one-CPU server never shows more than a
// core, though its last requests ran past --duration), and pass the
// report's bounds.
func TestSlowEndpointIsNotAHang(t *testing.T) {
	u := slowServer(t)
	rep, run := measureRun(t, u, "/burn?ms=1500", probes.LoadOptions{Duration: 1500 * time.Millisecond, Timeout: time.Second})
	if len(rep.Crashes) != 0 {
		t.Errorf("a slow endpoint is a crash: %+v", rep.Crashes)
	}
	msg := warning(rep, "slow-endpoint")
	if !strings.Contains(msg, "GET /burn is slow, not stuck") || !strings.Contains(msg, "the target used") ||
		!suggested.MatchString(msg) {
		t.Fatalf("slow-endpoint %q; warnings %+v", msg, rep.Warnings)
	}
	// None was answered at 1 s: the rate is 0, and one client is the least.
	if n := suggested.FindStringSubmatch(msg)[1]; rep.Latency.Requests-rep.Latency.Errors == 0 && n != "1" {
		t.Errorf("nothing answered, yet %s clients are suggested: %q", n, msg)
	}
	p := rep.TargetProcess
	if p == nil {
		t.Fatal("the server's process was not seen")
	}
	// Its runtime, read from its binary: this test's own Go.
	if rt := rep.TargetRuntime; rt == nil || rt.GoVersion != runtime.Version() || rt.From != "binary" {
		t.Errorf("the server's runtime %+v, want %s from its binary", rt, runtime.Version())
	}
	if p.CPUCores < busyCores || p.CPUCores > 1.15 {
		t.Errorf("a server on one CPU, burning it throughout, used %.2f cores", p.CPUCores)
	}
	// The requests in flight at the end ran past --duration, and the CPU
	// figures cover them: the machine's CPU over that window, probe's, the
	// target's and the others', is at most what the machine has.
	if run.CPUWindow <= run.Duration {
		t.Errorf("the CPU window %v ends before the last requests did (--duration %v)", run.CPUWindow, run.Duration)
	}
	gen := run.GeneratorCPU.Seconds() / run.CPUSpan().Seconds()
	t.Logf("window %v of %v; probe %.2f, target %.2f, others %.2f", run.CPUWindow, run.Duration, gen, p.CPUCores, run.OthersCPU)
	if sum := gen + p.CPUCores + run.OthersCPU; sum > 1.05*float64(runtime.NumCPU())+0.05 {
		t.Errorf("probe %.2f, the target %.2f and the others %.2f cores: more than the machine's %d", gen, p.CPUCores, run.OthersCPU,
			runtime.NumCPU())
	}
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, dropped, err := report.CheckBounds(js); err != nil || dropped != nil {
		t.Errorf("a real run's figures fail the bounds: %v %v", dropped, err)
	}
}

// A queue that answers some requests in time and lets the rest time out
// is slow; at the concurrency the warning suggests, far fewer of the same
// server's requests time out (the machine is shared: not always none, as
// the CPU the server gets varies).
func TestSlowEndpointSuggestsAConcurrencyThatMeasuresIt(t *testing.T) {
	u := slowServer(t)
	o := probes.LoadOptions{Duration: 2 * time.Second, Timeout: time.Second}
	rep := measureHTTP(t, u, "/queue?ms=40", o)
	msg := warning(rep, "slow-endpoint")
	m := suggested.FindStringSubmatch(msg)
	if len(rep.Crashes) != 0 || m == nil || !strings.Contains(msg, " were answered (p50 ") {
		t.Fatalf("crashes %+v, slow-endpoint %q", rep.Crashes, msg)
	}
	// Little's law on the run's own figures: the rate it answered × a
	// quarter of the timeout.
	n, _ := strconv.Atoi(m[1])
	rate := float64(rep.Latency.Requests-rep.Latency.Errors) / rep.DurationS
	if want := max(1, int(rate*0.25)); n != want || n >= 32 {
		t.Fatalf("suggested %d clients, not %d, for a queue answering %.2f a second and a 1s timeout: %q", n, want, rate, msg)
	}
	o.Concurrency = n
	again := measureHTTP(t, u, "/queue?ms=40", o)
	share := func(r *report.Run) float64 {
		return float64(r.Errors["timeout"]) / float64(max(1, r.Latency.Requests))
	}
	if share(again) >= share(rep)/2 {
		t.Errorf("at the suggested %d clients %d of %d requests timed out, at 32 %d of %d: %+v", n,
			again.Errors["timeout"], again.Latency.Requests, rep.Errors["timeout"], rep.Latency.Requests, again.Warnings)
	}
}

// An endpoint that never answers and uses no CPU is a hang.
func TestBlockedEndpointIsAHang(t *testing.T) {
	u := slowServer(t)
	rep := measureHTTP(t, u, "/block", probes.LoadOptions{Duration: 1500 * time.Millisecond, Timeout: 500 * time.Millisecond})
	if len(rep.Crashes) != 1 || rep.Crashes[0].Class != "hang" || rep.Crashes[0].Endpoint != "GET /block" ||
		!strings.Contains(rep.Crashes[0].Evidence, "stuck, not slow") {
		t.Errorf("crashes %+v", rep.Crashes)
	}
	if msg := warning(rep, "slow-endpoint"); msg != "" {
		t.Errorf("a blocked endpoint is called slow: %q", msg)
	}
}

// timedOut is an operation of calls of which timeouts outlived a 1s
// timeout and the rest were answered in 200 ms.
func timedOut(name string, calls, timeouts int64) *result.OpStats {
	o := op(name, false, 0)
	o.Calls, o.Errors = calls, timeouts
	o.Timeouts = hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
	for i := range calls {
		v := int64(200_000)
		if i < timeouts {
			v = 1_000_000
			o.Timeouts.RecordValue(v)
		}
		o.Service.RecordValue(v)
		o.Latency.RecordValue(v)
	}
	return o
}

// Each operation is judged on its own: one whose other requests were
// answered is slow, one with none answered on an idle target is the hang,
// and only it is named; an unseen target with nothing answered is a hang.
func TestSlowAndStuckOperationsApart(t *testing.T) {
	run := &result.Run{Microload: "mix", Mode: "closed", Concurrency: 32, Duration: 10 * time.Second, Timeout: time.Second,
		Errors: map[string]int64{"timeout": 12}, TargetProc: &result.ProcStats{CPU: 200 * time.Millisecond},
		Ops: []*result.OpStats{timedOut("GET /sitemap.xml", 90, 10), timedOut("GET /stuck", 2, 2), op("GET /", false, 50)}}
	a := AnalyzeRun(run, nil)
	if len(a.Crashes) != 1 || a.Crashes[0].Class != "hang" || a.Crashes[0].Endpoint != "GET /stuck" ||
		!strings.HasPrefix(a.Crashes[0].Evidence, "2 requests got no reply") || !strings.Contains(a.Crashes[0].Evidence, "0.02 cores: stuck") {
		t.Errorf("crashes %+v", a.Crashes)
	}
	if len(a.Warnings) != 1 || a.Warnings[0].Kind != "slow-endpoint" {
		t.Fatalf("warnings %+v", a.Warnings)
	}
	// 80 answered in 10 s: 8 a second × 250 ms = 2 clients.
	want := "GET /sitemap.xml is slow, not stuck: 10 of its requests got no reply within the 1s timeout while 80 were answered " +
		"(p50 200ms, max 200ms)"
	if msg := a.Warnings[0].Message; !strings.HasPrefix(msg, want) || !strings.Contains(msg, "--concurrency 2, or a longer --timeout") {
		t.Errorf("slow-endpoint %q", msg)
	}
	// A target busy on its CPU that answers nothing is slow too.
	run.TargetProc.CPU = 9 * time.Second
	if a := AnalyzeRun(run, nil); len(a.Crashes) != 0 || len(a.Warnings) != 2 || !strings.Contains(a.Warnings[1].Message,
		"GET /stuck is slow") {
		t.Errorf("a busy target: crashes %+v, warnings %+v", a.Crashes, a.Warnings)
	}
	// Nothing answered and no CPU figure: a hang.
	run.TargetProc = nil
	if a := AnalyzeRun(run, nil); len(a.Crashes) != 1 || !strings.Contains(a.Crashes[0].Evidence, "its CPU is not seen") {
		t.Errorf("an unseen target: crashes %+v", a.Crashes)
	}
}

// Timeouts in the tail of an endpoint that the clients do not queue (its
// rate × a quarter of the timeout is more clients than the run had) are
// not answered by fewer clients: the warning says so.
func TestSlowTailIsNotTheLoad(t *testing.T) {
	run := &result.Run{Microload: "sitemap", Mode: "closed", Concurrency: 32, Duration: time.Second, Timeout: time.Second,
		Errors: map[string]int64{"timeout": 5}, Ops: []*result.OpStats{timedOut("GET /sitemap.xml", 505, 5)}}
	a := AnalyzeRun(run, nil)
	if len(a.Crashes) != 0 || len(a.Warnings) != 1 {
		t.Fatalf("crashes %+v, warnings %+v", a.Crashes, a.Warnings)
	}
	msg := a.Warnings[0].Message
	if !strings.Contains(msg, "500 a second at 32 clients, a mean wait of 64ms") || !strings.Contains(msg,
		"a longer --timeout would measure them") ||
		strings.Contains(msg, "--concurrency") {
		t.Errorf("slow-endpoint %q", msg)
	}
}
