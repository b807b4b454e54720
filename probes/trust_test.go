package probes

import (
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/target"
)

// no-pprof names the flag and the places a target's profiles usually are.
func TestNoPprofNamesTheFlag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	tg := targetOf(t, srv)
	run := loadRoot(t, tg, LoadOptions{Concurrency: 1, Duration: 200 * time.Millisecond,
		Profile: &target.ProfileOptions{PprofURL: tg.URL.JoinPath("/debug/pprof/")}})
	var msg string
	for _, w := range run.Warnings {
		if w.Kind == "no-pprof" {
			msg = w.Message
		}
	}
	for _, want := range []string{"the target serves no profiles (", "--pprof URL", "/debug/pprof/ on the server's own port",
		":6060/debug/pprof/", ":2019/debug/pprof/"} {
		if !strings.Contains(msg, want) {
			t.Errorf("no-pprof %q lacks %q", msg, want)
		}
	}
}

// A CPU window that times out is kept as the capture's error, for
// profile-partial to name; the target still answered pprof at the end.
func TestCaptureKeepsTheWindowsError(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }) // hangs
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tg := targetOf(t, srv)
	run := loadRoot(t, tg, LoadOptions{Concurrency: 1, Duration: time.Second,
		Profile: &target.ProfileOptions{PprofURL: tg.URL.JoinPath("/debug/pprof/"), Window: time.Second, Slack: 300 * time.Millisecond}})
	p := run.Profiles
	if p == nil || p.CPUWindowError == nil || !target.IsTimeout(p.CPUWindowError) || !strings.HasPrefix(p.CPUWindowError.Error(), "CPU window 1: ") {
		t.Fatalf("profiles %+v", p)
	}
	if p.Unanswered || p.Goroutine == nil {
		t.Errorf("the goroutine profile at the end was answered: unanswered %v, goroutine %v", p.Unanswered, p.Goroutine != nil)
	}
}
