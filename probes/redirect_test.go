package probes

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/redirect"
)

// Issue 34: no credential follows a redirect. Each client of this
// package against a target that answers 3xx to another address (another
// port of 127.0.0.1: another origin, where Go's own client keeps even
// Authorization): the other address gets no request at all.

// elsewhere counts every request it gets, over HTTP/1.1 or h2c.
func elsewhere(t *testing.T) (*url.URL, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	u, _ := serveH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	return u, &n
}

// serveH2C serves h over HTTP/1.1 and h2c (prior knowledge) on a port of
// 127.0.0.1.
func serveH2C(t *testing.T, h http.Handler) (*url.URL, *http.Server) {
	t.Helper()
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: &protos, Handler: h}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return &url.URL{Scheme: "http", Host: l.Addr().String()}, srv
}

// mover answers every request 307 to other, the same path.
func mover(t *testing.T, other *url.URL) *url.URL {
	u, _ := serveH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.String()+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	return u
}

// secrets are a target's standing header and Authorization.
var secrets = []h1.Field{{Name: "X-API-Key", Value: "key"}, {Name: "Authorization", Value: "Bearer token"}}

// The load engine (lib/h1, lib/h2) follows no redirect: a 3xx is a status
// like any other, a reply below 400, over HTTP/1.1 and HTTP/2 alike.
func TestLoadEngineFollowsNoRedirect(t *testing.T) {
	other, got := elsewhere(t)
	for _, http2 := range []bool{false, true} {
		target := &Target{URL: mover(t, other), Header: secrets}
		if http2 {
			target.HTTP2 = &HTTP2{}
		}
		run, err := RunLoad(context.Background(), &HTTP{Path: "/x"}, target,
			LoadOptions{Concurrency: 2, Duration: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		calls, errs := run.Requests()
		if calls < 5 || errs != 0 {
			t.Errorf("HTTP/2 %v: %d calls, %d errors (%v): want the 307s as replies", http2, calls, errs, run.Errors)
		}
		if got.Load() != 0 {
			t.Fatalf("HTTP/2 %v: the other address got %d requests", http2, got.Load())
		}
	}
}

// Discovery reads robots.txt and the sitemaps on the load engine's
// connections: a 3xx there is no sitemap, and nothing is asked elsewhere.
func TestDiscoveryFollowsNoRedirect(t *testing.T) {
	other, got := elsewhere(t)
	target := &Target{URL: mover(t, other), Header: secrets}
	_, err := RunLoad(context.Background(), &Sitemap{}, target,
		LoadOptions{Concurrency: 1, Duration: 100 * time.Millisecond})
	if err == nil {
		t.Fatal("a site whose every page is a redirect gave sitemaps")
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
}

// gRPC follows no redirect, by its load (lib/h2) or its reflection
// (grpc-go): a 307 is a failed call or a failed reflection.
func TestGRPCFollowsNoRedirect(t *testing.T) {
	other, got := elsewhere(t)
	target := &Target{URL: mover(t, other), Header: secrets, HTTP2: &HTTP2{}}
	proto := filepath.Join(t.TempDir(), "feed.proto")
	if err := os.WriteFile(proto, []byte(`syntax = "proto3";
package feed;
message Ask { string topic = 1; }
message Item { string text = 1; }
service Feed { rpc Get(Ask) returns (Item); }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	grpcLoad := &GRPC{Method: "feed.Feed/Get", Data: `{"topic": "x"}`, Proto: []string{proto}}
	run, err := RunLoad(context.Background(), grpcLoad, target, LoadOptions{Concurrency: 1, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if calls, errs := run.Requests(); calls == 0 || errs != calls {
		t.Errorf("%d calls, %d errors: want every 307 a failed call", calls, errs)
	}
	target = &Target{URL: mover(t, other), Header: secrets, HTTP2: &HTTP2{}}
	if _, err := RunLoad(context.Background(), &GRPC{Method: "feed.Feed/Get"}, target,
		LoadOptions{Concurrency: 1, Duration: 100 * time.Millisecond}); err == nil {
		t.Error("reflection answered 307 found the method")
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
}

// The pprof fetches refuse a 3xx in one line naming the Location.
func TestPprofFetchRefusesRedirects(t *testing.T) {
	other, got := elsewhere(t)
	base := mover(t, other)
	pprofURL := base.JoinPath("/debug/pprof/")
	err := CheckPprof(context.Background(), pprofURL)
	want := pprofURL.String() + ": the pprof fetch was redirected (307 to " + other.String() + "/debug/pprof/)"
	if redirect.As(err) == nil || err.Error() != want+"; probe follows no redirect with its credentials or headers" {
		t.Errorf("CheckPprof: %v, want %q", err, want)
	}
	p := captureProfiles(context.Background(), ProfileOptions{PprofURL: pprofURL, Window: time.Second}, time.Second)
	found := false
	for _, w := range p.Warnings {
		found = found || strings.Contains(w.Message, "pprof/profile: the pprof fetch was redirected (307 to "+other.String())
	}
	if !found {
		t.Errorf("warnings %+v: none names the refused redirect", p.Warnings)
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
}

// The settle wait's timed GET takes a 3xx as the reply it times.
func TestReplyTimeFollowsNoRedirect(t *testing.T) {
	other, got := elsewhere(t)
	target := &Target{URL: mover(t, other), Header: secrets}
	if _, err := ReplyTime(context.Background(), target, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
}
