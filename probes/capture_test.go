package probes

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"runtime/debug"
	"strings"
	"testing"
	"time"
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
	o := &ProfileOptions{PprofURL: tg.URL.JoinPath("/debug/pprof/"), FgprofURL: tg.URL.JoinPath("/debug/fgprof"), Window: time.Second}
	run, err := RunLoad(context.Background(), &HTTP{Path: "/"}, tg, LoadOptions{Concurrency: 2, Duration: 3 * time.Second, Profile: o})
	if err != nil {
		t.Fatal(err)
	}
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
	run, err := RunLoad(context.Background(), &HTTP{Path: "/"}, tg, LoadOptions{Concurrency: 1, Duration: 300 * time.Millisecond,
		Profile: &ProfileOptions{PprofURL: tg.URL.JoinPath("/debug/pprof/")}})
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := run.Requests()
	if !hasWarning(run, "no-pprof") || run.Profiles != nil || calls == 0 {
		t.Errorf("warnings %v, profiles %v, %d calls", run.Warnings, run.Profiles, calls)
	}
}

func TestProfileFetchFailuresAreWarnings(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }) // hangs
	mux.HandleFunc("/debug/pprof/allocs", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("not a profile")) })
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tg := targetOf(t, srv)
	began := time.Now()
	run, err := RunLoad(context.Background(), &HTTP{Path: "/"}, tg, LoadOptions{Concurrency: 1, Duration: time.Second,
		Profile: &ProfileOptions{PprofURL: tg.URL.JoinPath("/debug/pprof/"), Window: time.Second, Slack: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(began) > 10*time.Second {
		t.Errorf("a hanging profile held the run for %s", time.Since(began))
	}
	calls, _ := run.Requests()
	var msgs []string
	for _, w := range run.Warnings {
		msgs = append(msgs, w.Message)
	}
	all := strings.Join(msgs, "\n")
	if calls == 0 || !strings.Contains(all, "CPU window 1") || !strings.Contains(all, "allocations") {
		t.Errorf("%d calls, warnings:\n%s", calls, all)
	}
}

//go:noinline
func allocateA(n int) []byte { return make([]byte, n) }

//go:noinline
func allocateB(n int) []byte { return make([]byte, n) }

// A heap profile is as of the last GC: with the collector off, a plain
// delta sees nothing of the window, and after a run it sees that run's
// allocations in the next. The window is bracketed by GCs: run B shows
// B's allocations and none of run A's.
func TestAllocationWindowIsExact(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) { b := allocateA(64 << 10); b[0] = 'a'; w.Write(b[:1]) })
	mux.HandleFunc("/b", func(w http.ResponseWriter, r *http.Request) { b := allocateB(64 << 10); b[0] = 'b'; w.Write(b[:1]) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tg := targetOf(t, srv)
	if _, err := RunLoad(context.Background(), &HTTP{Path: "/a"}, tg, LoadOptions{Concurrency: 2, Duration: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	o := &ProfileOptions{PprofURL: tg.URL.JoinPath("/debug/pprof/"), Window: time.Second}
	run, err := RunLoad(context.Background(), &HTTP{Path: "/b"}, tg, LoadOptions{Concurrency: 2, Duration: time.Second, Profile: o})
	if err != nil {
		t.Fatal(err)
	}
	if hasWarning(run, "allocs-approximate") || run.Profiles == nil || run.Profiles.Allocs == nil {
		t.Fatalf("warnings %v", run.Warnings)
	}
	bytesOf := func(fn string) int64 {
		p := run.Profiles.Allocs
		idx, _ := p.SampleIndexByName("alloc_space")
		var n int64
		for _, s := range p.Sample {
			for _, loc := range s.Location {
				for _, l := range loc.Line {
					if strings.HasSuffix(l.Function.Name, fn) {
						n += s.Value[idx]
					}
				}
			}
		}
		return n
	}
	if a, b := bytesOf(".allocateA"), bytesOf(".allocateB"); a != 0 || b < 1<<20 {
		t.Errorf("the window shows %d bytes of run A's allocations and %d of its own", a, b)
	}
}
