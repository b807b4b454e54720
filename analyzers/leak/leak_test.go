package leak_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/leak"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// parkForever is the leaked goroutine: it waits on a channel nobody
// sends to or closes.
func parkForever(ch chan int) { <-ch }

// leakyHandler leaves one goroutine behind a request.
func leakyHandler(w http.ResponseWriter, r *http.Request) {
	ch := make(chan int)
	go parkForever(ch)
	fmt.Fprintln(w, "ok")
}

// cleanHandler waits on its goroutine, which always ends.
func cleanHandler(w http.ResponseWriter, r *http.Request) {
	ch := make(chan int)
	go func() { ch <- 1 }()
	<-ch
	fmt.Fprintln(w, "ok")
}

// leakServer serves the two handlers and net/http/pprof; without the
// leak profile its goroutineleak answers 404, as a target whose Go has
// none does.
func leakServer(t *testing.T, leakProfile bool) leakTarget {
	mux := http.NewServeMux()
	mux.HandleFunc("/leak", leakyHandler)
	mux.HandleFunc("/clean", cleanHandler)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	if !leakProfile {
		mux.HandleFunc("/debug/pprof/"+result.LeakProfile, http.NotFound)
	}
	// The test's load starts once the window's first leak read (or
	// goroutine count, without the profile) has been answered.
	first := leakProfile
	var once sync.Once
	read := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/")
		if first && name == result.LeakProfile || !first && name == "goroutine" {
			once.Do(func() { close(read) })
		}
	}))
	t.Cleanup(srv.Close)
	return leakTarget{srv, read}
}

// leakTarget is a test server and the channel closed when a window's
// first leak read was answered.
type leakTarget struct {
	*httptest.Server
	firstRead chan struct{}
}

const clients, requests = 4, 200

// loadAndCapture sends the requests to path from clients clients inside
// a profiled window, as a profiled run does, and gives what it captured.
func loadAndCapture(t *testing.T, srv leakTarget, path string) *result.Profiles {
	t.Helper()
	pprofURL, _ := url.Parse(srv.URL + "/debug/pprof/")
	o := target.ProfileOptions{PprofURL: pprofURL, Window: time.Second, LeakSettle: 500 * time.Millisecond}
	captured := make(chan *result.Profiles, 1)
	go func() { captured <- target.CaptureProfiles(context.Background(), o, 3*time.Second) }()
	select {
	case <-srv.firstRead:
	case <-time.After(time.Minute):
		t.Fatal("the window's first leak read never came")
	}
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for range requests / clients {
				resp, err := client.Get(srv.URL + path)
				if err != nil {
					t.Errorf("client %d: %v", c, err)
					return
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	tr.CloseIdleConnections()
	p := <-captured
	if p.Leaks == nil {
		t.Fatalf("no leak check; warnings %v", p.Warnings)
	}
	return p
}

func run(path string) leak.Run {
	return leak.Run{Microload: "http", Endpoint: path, Requests: requests, Clients: clients}
}

func TestLeakProfileFindsTheHandlersLeak(t *testing.T) {
	p := loadAndCapture(t, leakServer(t, true), "/leak")
	if p.Leaks.Source != result.LeakProfile {
		t.Fatalf("source %q, want %q (Go 1.27 serves the leak profile without an experiment)", p.Leaks.Source,
			result.LeakProfile)
	}
	fs := leak.Findings(p.Leaks, run("/leak"))
	if len(fs) == 0 {
		t.Fatalf("no finding; leak check %+v", p.Leaks)
	}
	f := fs[0]
	t.Logf("%+v", f)
	if f.Rule != "goroutine-leak" || f.Class != "leak" {
		t.Errorf("rule %q class %q, want goroutine-leak, leak", f.Rule, f.Class)
	}
	frames := strings.Join(f.Frames, "\n")
	if !strings.Contains(frames, "leak_test.parkForever") || !strings.Contains(frames, "leak_test.leakyHandler") {
		t.Errorf("frames %q hold not both the leaked goroutine's function and the handler", f.Frames)
	}
	// The runtime finds every goroutine blocked on a channel no live
	// goroutine can reach; allow a few that a GC in flight missed.
	var n int
	if _, err := fmt.Sscanf(f.Evidence, "%d goroutines leaked", &n); err != nil || n < requests*9/10 || n > requests {
		t.Errorf("evidence %q: want about %d goroutines leaked", f.Evidence, requests)
	}
	if !strings.Contains(f.Evidence, "per 1,000 requests") || !strings.Contains(f.Evidence, "during http") {
		t.Errorf("evidence %q says not the rate per 1,000 requests and the load", f.Evidence)
	}
}

func TestLeakProfileCleanServerHasNoLeak(t *testing.T) {
	p := loadAndCapture(t, leakServer(t, true), "/clean")
	if fs := leak.Findings(p.Leaks, run("/clean")); len(fs) > 0 {
		t.Errorf("a clean server got %v", fs)
	}
}

func TestGoroutineCountsStandInForNoLeakProfile(t *testing.T) {
	for _, tc := range []struct {
		path string
		want []string
	}{{"/leak", []string{"goroutine-growth"}}, {"/clean", nil}} {
		p := loadAndCapture(t, leakServer(t, false), tc.path)
		if p.Leaks.Source != result.LeakGoroutines {
			t.Fatalf("%s: source %q, want %q", tc.path, p.Leaks.Source, result.LeakGoroutines)
		}
		for _, w := range p.Warnings {
			if w.Kind == "leak-profile" {
				t.Errorf("%s: a 404 is no bad profile: %v", tc.path, w)
			}
		}
		fs := leak.Findings(p.Leaks, run(tc.path))
		var got []string
		for _, f := range fs {
			got = append(got, f.Rule)
			if f.Class != "info" {
				t.Errorf("%s: a count is evidence only, class %q", tc.path, f.Class)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: findings %v, want %v (counts %d → %d)", tc.path, got, tc.want, p.Leaks.Before, p.Leaks.After)
		}
	}
}

var _ = analyzers.Finding{}
