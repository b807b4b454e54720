package target

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

// drive sends GETs of u from n goroutines until ctx ends: a load that is
// not the engine's, for the profiles to see.
func drive(ctx context.Context, u string, n int) (wait func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	return wg.Wait
}

// pprofMux serves net/http/pprof's index (and through it every named
// profile) and profile as the CPU profile; a test adds its own handlers.
func pprofMux(profile http.HandlerFunc) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", profile)
	return mux
}

// serve serves h until the test ends, and returns its URL.
func serve(t *testing.T, h http.Handler) *url.URL {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

func TestProfileFetchFailuresAreWarnings(t *testing.T) {
	mux := pprofMux(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }) // hangs
	mux.HandleFunc("/debug/pprof/allocs", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("not a profile")) })
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	u := serve(t, mux)
	began := time.Now()
	p := CaptureProfiles(context.Background(), ProfileOptions{PprofURL: u.JoinPath("/debug/pprof/"), Window: time.Second,
		Slack: 500 * time.Millisecond}, time.Second)
	if time.Since(began) > 10*time.Second {
		t.Errorf("a hanging profile held the capture for %s", time.Since(began))
	}
	var msgs []string
	for _, w := range p.Warnings {
		msgs = append(msgs, w.Message)
	}
	all := strings.Join(msgs, "\n")
	if p.CPUWindowError == nil || !strings.Contains(all, "CPU window 1") || !strings.Contains(all, "allocations") {
		t.Errorf("CPU window error %v, warnings:\n%s", p.CPUWindowError, all)
	}
}

//go:noinline
func allocateA(n int) []byte { return make([]byte, n) }

//go:noinline
func allocateB(n int) []byte { return make([]byte, n) }

// A heap profile is as of the last GC: with the collector off, a plain
// delta sees nothing of the window, and after a load it sees that load's
// allocations in the next. The window is bracketed by GCs: load B shows
// B's allocations and none of load A's.
func TestAllocationWindowIsExact(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	mux := pprofMux(pprof.Profile)
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) { b := allocateA(64 << 10); b[0] = 'a'; w.Write(b[:1]) })
	mux.HandleFunc("/b", func(w http.ResponseWriter, r *http.Request) { b := allocateB(64 << 10); b[0] = 'b'; w.Write(b[:1]) })
	u := serve(t, mux)
	ctx, stop := context.WithTimeout(context.Background(), 500*time.Millisecond)
	drive(ctx, u.JoinPath("/a").String(), 2)()
	stop()
	ctx, stop = context.WithCancel(context.Background())
	wait := drive(ctx, u.JoinPath("/b").String(), 2)
	o := ProfileOptions{PprofURL: u.JoinPath("/debug/pprof/"), Window: time.Second}
	p := CaptureProfiles(context.Background(), o, time.Second)
	stop()
	wait()
	approximate := false
	for _, w := range p.Warnings {
		approximate = approximate || w.Kind == "allocs-approximate"
	}
	if p.Allocs == nil || approximate {
		t.Fatalf("allocations %v, warnings %v", p.Allocs != nil, p.Warnings)
	}
	bytesOf := func(fn string) int64 {
		idx, _ := p.Allocs.SampleIndexByName("alloc_space")
		var n int64
		for _, s := range p.Allocs.Sample {
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
		t.Errorf("the window shows %d bytes of load A's allocations and %d of its own", a, b)
	}
}
