package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/report/rampreport"
)

// capacityServer does a fixed work per request with a fixed number of
// workers: its capacity is workers / service time. With locked, every
// request also holds one lock across its work, so the lock is the limit.
type capacityServer struct {
	workers chan struct{}
	service time.Duration
	locked  bool
	mu      sync.Mutex
}

func (s *capacityServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.workers <- struct{}{}
	defer func() { <-s.workers }()
	if s.locked {
		s.lockedWork()
	} else {
		time.Sleep(s.service)
	}
	fmt.Fprintln(w, "done")
}

// lockedWork holds the lock across the work.
func (s *capacityServer) lockedWork() {
	s.mu.Lock()
	defer s.mu.Unlock()
	time.Sleep(s.service)
}

// serveCapacity serves a capacityServer on addr, with pprof and the mutex
// and block profiles on.
func serveCapacity(addr, workers, serviceMS string) {
	n, _ := strconv.Atoi(workers)
	ms, _ := strconv.Atoi(strings.TrimSuffix(serviceMS, "-locked"))
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	s := &capacityServer{workers: make(chan struct{}, n), service: time.Duration(ms) * time.Millisecond,
		locked: strings.HasSuffix(serviceMS, "-locked")}
	http.Handle("/work", s)
	http.ListenAndServe(addr, nil)
}

// startCapacityServer starts the test binary as a capacity server.
func startCapacityServer(t *testing.T, workers int, service string) string {
	t.Helper()
	addr := freeAddr(t)
	self, _ := os.Executable()
	startProcess(t, self, "capacity-server", addr, strconv.Itoa(workers), service)
	waitAnswers(t, "http://"+addr+"/debug/pprof/")
	return "http://" + addr
}

// rampReport is report.json of probe ramp.
type rampReport = rampreport.Ramp

// rampWork ramps url's /work in steps and reads the report.
func rampWork(t *testing.T, url, steps string) rampReport {
	t.Helper()
	file := clitest.WriteFile(t, "probe.json", workScenario)
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "ramp", "--target", url, "--file", file,
		"--steps", steps, "--json", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r rampReport
	decodeStdout(t, steps, stdout, &r)
	return r
}

const workScenario = `{"scenarios": [{"name": "work", "steps": [{"name": "work", "path": "/work", "checks": {"contains": "done"}}]}]}`

// A server of 10 workers and 50 ms of service: capacity 200 a second (a
// sleep overshoots by a little: the longer the service, the less that
// counts). The knee probe finds lies within 10% of it, and the ramp stops
// past it.
func TestRampFindsTheKnee(t *testing.T) {
	url := startCapacityServer(t, 10, "50")
	r := rampWork(t, url, "120,160,180,190,210,240,280/3s")
	t.Logf("knee %g/s: %q; windows %+v", r.Knee.Rate, r.Knee.Says, r.Windows)
	if !r.Knee.Found || math.Abs(r.Knee.Rate-200)/200 > 0.1 {
		t.Errorf("knee %v at %g, want within 10%% of 200: %v %+v", r.Knee.Found, r.Knee.Rate, r.Knee.Says, r.Windows)
	}
	if !strings.HasPrefix(r.Ended, "stopped: past the knee") || len(r.Windows) == 7 && r.Ended == "" {
		t.Errorf("ended %q after %d windows: the ramp should stop past the knee", r.Ended, len(r.Windows))
	}
	// Below the knee, sessions in flight are what Little's law says.
	w := r.Windows[0]
	if !w.Holds || w.LittleL == 0 || math.Abs(w.InFlightMean-w.LittleL) > 0.5*w.LittleL+0.5 {
		t.Errorf("first window: holds %v, in flight %.2f against λW %.2f", w.Holds, w.InFlightMean, w.LittleL)
	}
	if !strings.Contains(strings.Join(r.Knee.Says, " "), "sessions in flight grow") {
		t.Errorf("says %q: want what grew", r.Knee.Says)
	}
}

// The same work behind one lock: capacity 1/S, and a contention finding
// names the lock's function.
func TestRampNamesTheLock(t *testing.T) {
	url := startCapacityServer(t, 64, "20-locked")
	r := rampWork(t, url, "20,40,60,80/3s")
	t.Logf("knee %g/s: %q; findings %+v", r.Knee.Rate, r.Knee.Says, r.Findings)
	if !r.Knee.Found || math.Abs(r.Knee.Rate-50)/50 > 0.25 {
		t.Errorf("knee %v at %g, want about 50: %v", r.Knee.Found, r.Knee.Rate, r.Knee.Says)
	}
	var found bool
	for _, f := range r.Findings {
		if f.Rule == "contention" && strings.Contains(f.OwnFrame, "lockedWork") && strings.Contains(f.Evidence, "lock") && f.WaitShare > 0.2 {
			found = true
		}
	}
	if !found {
		t.Errorf("no contention finding naming lockedWork: %+v", r.Findings)
	}
	if !strings.Contains(strings.Join(r.Knee.Says, " "), "contention") {
		t.Errorf("says %q: want the contention named", r.Knee.Says)
	}
}
