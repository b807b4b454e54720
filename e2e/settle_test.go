package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/clitest"
)

// burnServer is a slow real server in small (issue 25): each request of
// /sitemap.xml leaves it working, one core, until burn after the last
// one — whether or not its client is still there — and its pages wait for
// that one worker, as a blog's do for its busy PHP workers.
type burnServer struct {
	burn    time.Duration
	worker  sync.Mutex // held by the burn; every page waits for it
	mu      sync.Mutex // guards until and burning
	until   time.Time
	burning bool
}

func (s *burnServer) kick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.until = time.Now().Add(s.burn)
	if s.burning {
		return
	}
	s.burning = true
	go func() {
		s.worker.Lock()
		defer s.worker.Unlock()
		for x := 0; ; x++ {
			s.mu.Lock()
			done := !time.Now().Before(s.until)
			if done {
				s.burning = false
			}
			s.mu.Unlock()
			if done {
				return
			}
			for i := 0; i < 100_000; i++ { // CPU, not sleep: what /proc sees
				x = x*31 + i
			}
		}
	}()
}

func serveBurn(addr, burnMS string) {
	var ms int
	fmt.Sscan(burnMS, &ms)
	s := &burnServer{burn: time.Duration(ms) * time.Millisecond}
	pages := `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`
	for n := 1; n <= 5; n++ {
		pages += fmt.Sprintf("<url><loc>http://%s/p/%d</loc></url>", addr, n)
	}
	pages += "</urlset>"
	mux := http.NewServeMux()
	mux.HandleFunc("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		s.kick()
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, pages)
	})
	mux.HandleFunc("/pages.xml", func(w http.ResponseWriter, r *http.Request) {
		s.worker.Lock()
		s.worker.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, pages)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.worker.Lock()
		s.worker.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!DOCTYPE html><html><head><title>%s</title></head><body><p>a page</p></body></html>", r.URL.Path)
	})
	http.ListenAndServe(addr, mux)
}

// startBurnServer starts the test binary as a burn server: a process of
// its own, so that its CPU is seen apart from probe's.
func startBurnServer(t *testing.T, burn time.Duration) string {
	t.Helper()
	addr := freeAddr(t)
	self, _ := os.Executable()
	startProcess(t, self, "burn-server", addr, fmt.Sprint(burn.Milliseconds()))
	waitAnswers(t, "http://"+addr+"/p/1")
	return "http://" + addr
}

// After probe all's sitemap run the server works on for 5 s; the page
// microload's discovery (--timeout 2s) fails unless probe waits for it.
func TestAllWaitsForAQuietTarget(t *testing.T) {
	file := clitest.WriteFile(t, "probe.json", `{ "microloads": [
  { "name": "sitemap", "use": "sitemap", "path": "/sitemap.xml" },
  { "name": "page", "use": "page", "sitemap": "/pages.xml" } ] }`)
	run := func(settle string) (int, anyReport, string) {
		url := startBurnServer(t, 5*time.Second)
		return runJSON(t, "all", "--file", file, "--target", url, "--timeout", "2s", "--settle", settle)
	}

	// Without the wait: the page microload is skipped, its discovery timed
	// out on a server still busy with what the sitemap run left.
	code, rep, stderr := run("0")
	if len(rep.Runs) != 1 || len(rep.Skipped) != 1 || rep.Skipped[0].Microload != "page" {
		t.Fatalf("--settle 0: exit %d, %d runs, skipped %+v: want page skipped\n%s", code, len(rep.Runs), rep.Skipped, stderr)
	}

	code, rep, stderr = run("30s")
	if code != exitOK || len(rep.Runs) != 2 || len(rep.Skipped) != 0 {
		t.Fatalf("--settle 30s: exit %d, %d runs, skipped %+v: want both run\n%s", code, len(rep.Runs), rep.Skipped, stderr)
	}
	if rep.Runs[0].Settle != nil {
		t.Errorf("the first microload waited: %+v", rep.Runs[0].Settle)
	}
	st := rep.Runs[1].Settle
	if st == nil || !st.Quiet || st.JudgedBy != "cpu" || st.WaitedS < 2 || st.WaitedS > 30 || st.CoresAtStart <= st.IdleCores {
		t.Fatalf("page's settle %+v: want a wait of seconds for a target busier than at rest, ending quiet", st)
	}
	if rep.Runs[1].Latency.Requests == 0 || !strings.Contains(stderr, "the target is busy: waiting") || !strings.Contains(stderr,
		"the target was quiet after") {
		t.Errorf("page: %d requests; stderr %s", rep.Runs[1].Latency.Requests, stderr)
	}

	// A bound shorter than the work: the run goes on, with target-busy.
	code, rep, stderr = run("1s")
	var busy bool
	for _, w := range rep.Warnings { // the suite's: its runs' and its skipped microloads'
		busy = busy || w.Kind == "target-busy" && strings.Contains(w.Message, "--settle")
	}
	for _, sk := range rep.Skipped {
		busy = busy && strings.Contains(sk.Reason, "the target was still busy")
	}
	if !busy {
		t.Errorf("--settle 1s: exit %d, runs %d, skipped %+v: want target-busy, and any skip saying so\n%s", code, len(rep.Runs),
			rep.Skipped, stderr)
	}
}
