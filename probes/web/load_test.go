package web

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/lib/redirect/redirecttest"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
)

// targetOf is the target of a test server.
func targetOf(t *testing.T, srv *httptest.Server) *probes.Target {
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &probes.Target{URL: u}
}

func TestCheckFailuresAreCountedByReason(t *testing.T) {
	srv := sitemapServer(t, func(n int64, w http.ResponseWriter) {
		switch n % 4 {
		case 0:
			w.WriteHeader(500)
		case 1:
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte("<urlset><url><loc>http://x/a</loc></url></urlset>"))
		case 2:
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte("<urlset></urlset>"))
		case 3:
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>"))
		}
	})
	// The first request (Prepare's) gets case 1, a whole sitemap.
	run := fortySitemapLoads(t, srv)
	calls, errs := run.Requests()
	if calls < 20 || errs < calls/2 {
		t.Fatalf("%d calls, %d errors: want three in four failing", calls, errs)
	}
	want := []string{"status 500", "sitemap lists no URLs", `content type "text/html"`}
	for _, w := range want {
		found := false
		for reason := range run.Errors {
			if strings.Contains(reason, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no error reason with %q in %v", w, run.Errors)
		}
	}
}

// A reply's verdict is its bytes': replies that alternate between one
// that passes the check and one that fails get alternating verdicts,
// however the verdicts are cached.
func TestVerdictsFollowTheBytes(t *testing.T) {
	srv := sitemapServer(t, func(n int64, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/xml")
		if n%2 == 1 {
			w.Write([]byte("<urlset><url><loc>http://x/a</loc></url></urlset>"))
			return
		}
		w.Write([]byte("<urlset></urlset>"))
	})
	run := fortySitemapLoads(t, srv)
	calls, errs := run.Requests()
	if calls < 20 || errs < calls/2-1 || errs > calls/2+1 {
		t.Errorf("%d calls, %d failed: want every other one (errors %v)", calls, errs, run.Errors)
	}
}

func TestUnreachableTarget(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	u, _ := url.Parse("http://" + addr)
	_, err := probes.RunLoad(context.Background(), &Sitemap{}, &probes.Target{URL: u}, probes.LoadOptions{Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err %v", err)
	}
}

// Discovery reads robots.txt and the sitemaps on the load engine's
// connections: a 3xx there is no sitemap, and nothing is asked elsewhere.
func TestDiscoveryFollowsNoRedirect(t *testing.T) {
	other, _ := redirecttest.Elsewhere(t)
	target := &probes.Target{URL: redirecttest.Mover(t, other), Header: redirecttest.Secrets}
	_, err := probes.RunLoad(context.Background(), &Sitemap{}, target,
		probes.LoadOptions{Concurrency: 1, Duration: 100 * time.Millisecond})
	if err == nil {
		t.Fatal("a site whose every page is a redirect gave sitemaps")
	}
}

// fortySitemapLoads runs the sitemap load against srv for 40 requests on
// one client; the test ends on an error.
func fortySitemapLoads(t *testing.T, srv *httptest.Server) *result.Run {
	t.Helper()
	run, err := probes.RunLoad(context.Background(), &Sitemap{}, targetOf(t, srv),
		probes.LoadOptions{Concurrency: 1, Requests: 40, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// sitemapServer has no robots.txt and answers every other request with
// reply(n, w), n counting the requests from 1.
func sitemapServer(t *testing.T, reply func(n int64, w http.ResponseWriter)) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		reply(n.Add(1), w)
	}))
	t.Cleanup(srv.Close)
	return srv
}
