package probes

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/target"
)

func TestProfilesOfARealServer(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sum := 0
		for i := range 20000 {
			sum += i * i
		}
		w.Write([]byte("ok"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tg := targetOf(t, srv)
	o := &target.ProfileOptions{PprofURL: tg.URL.JoinPath("/debug/pprof/"), FgprofURL: tg.URL.JoinPath("/debug/fgprof"), Window: time.Second}
	run := loadRoot(t, tg, LoadOptions{Concurrency: 2, Duration: 3 * time.Second, Profile: o})
	// Three 1 s windows fit in 3 s; a busy machine may fit one fewer (a
	// fetch takes its second and then some), never one.
	p := run.Profiles
	if p == nil || len(p.Windows) < 2 || len(p.Windows) > 3 || p.CPU == nil || p.Allocs == nil || p.Goroutine == nil {
		t.Fatalf("profiles %+v", p)
	}
	files := []string{"cpu.pb.gz", "allocs.pb.gz", "goroutine.pb.gz"}
	for i := range p.Windows {
		files = append(files, fmt.Sprintf("cpu-window-%02d.pb.gz", i+1))
	}
	for _, f := range files {
		if len(p.Raw[f]) == 0 {
			t.Errorf("no %s", f)
		}
	}
	if !hasWarning(run, "no-fgprof") {
		t.Errorf("a target without fgprof: %v", run.Warnings)
	}
}

func TestTargetWithoutPprof(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/debug/") {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	tg := targetOf(t, srv)
	run := loadRoot(t, tg, LoadOptions{Concurrency: 1, Duration: 300 * time.Millisecond,
		Profile: &target.ProfileOptions{PprofURL: tg.URL.JoinPath("/debug/pprof/")}})
	calls, _ := run.Requests()
	if !hasWarning(run, "no-pprof") || run.Profiles != nil || calls == 0 {
		t.Errorf("warnings %v, profiles %v, %d calls", run.Warnings, run.Profiles, calls)
	}
}
