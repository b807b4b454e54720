package ws

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/probehq/probe/lib/redirect"
)

// elsewhere is a working hub on another address (another port of
// 127.0.0.1: another origin) that counts every request it gets: where a
// hostile target points its redirects. It must get none.
func elsewhere(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	h := newHub("")
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

// redirecting is a hub that answers with a redirect to other (the same
// path and query) the requests move says to move.
func redirecting(t *testing.T, other string, status int, move func(r *http.Request) bool) *httptest.Server {
	t.Helper()
	h := newHub("")
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if move(r) {
			http.Redirect(w, r, other+r.URL.RequestURI(), status)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// hostile are the run's options with the credentials a run carries: a
// standing header and the token in Authorization (and the hub's in the
// query).
func hostile(t *testing.T, srv *httptest.Server) Options {
	o := options(t, srv)
	o.Path = "/ws?room={room}&token=t0k"
	o.Auth, o.Token = "header", "t0k"
	o.Header = http.Header{"X-Api-Key": {"secret"}}
	return o
}

// A target that answers the upgrade 302 elsewhere: the run is refused in
// one line naming the Location, and nothing reaches the other address.
func TestRedirectedUpgradeIsRefused(t *testing.T) {
	other, got := elsewhere(t)
	srv := redirecting(t, other.URL, http.StatusFound, func(r *http.Request) bool { return r.URL.Path == "/ws" })
	_, err := Run(context.Background(), hostile(t, srv))
	e := redirect.As(err)
	if e == nil || e.Status != 302 || !strings.HasPrefix(e.Location, other.URL+"/ws") {
		t.Fatalf("err %v, want a refused 302 naming %s/ws", err, other.URL)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") ||
		!strings.HasPrefix(msg, "the WebSocket upgrade was redirected (302 to "+other.URL+"/ws") {
		t.Fatalf("message %q", msg)
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests (the headers and the token with them)", got.Load())
	}
}

// A target that redirects all upgrades but the first: those are refused
// upgrades named as redirects, not connections that lost their events.
func TestRedirectedUpgradesAreNotLostEvents(t *testing.T) {
	other, got := elsewhere(t)
	var upgrades atomic.Int64
	srv := redirecting(t, other.URL, http.StatusFound, func(r *http.Request) bool {
		return r.URL.Path == "/ws" && upgrades.Add(1) > 1
	})
	res, err := Run(context.Background(), hostile(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
	refusal := "the WebSocket upgrade was redirected (302 to " + other.URL
	if res.Refused != 39 || res.ReadyCount != 1 || !strings.HasPrefix(res.FirstRefusal, refusal) {
		t.Fatalf("refused %d, ready %d, first refusal %q", res.Refused, res.ReadyCount, res.FirstRefusal)
	}
	// The one connection upgraded gets its room's 6 events; none is missing.
	if res.Totals.Missing != 0 || res.Totals.Expected != 6 || res.Totals.Delivered != 6 {
		t.Fatalf("totals %+v: the refused connections were counted as losing events", res.Totals)
	}
}

// A publish answered 307: not sent again elsewhere (with the body, the
// standing header and, to another port of the same host, Authorization),
// not accepted, and the run says where it pointed.
func TestRedirectedPublishIsRefused(t *testing.T) {
	other, got := elsewhere(t)
	srv := redirecting(t, other.URL, http.StatusTemporaryRedirect, func(r *http.Request) bool {
		return r.URL.Path == "/publish"
	})
	res, err := Run(context.Background(), hostile(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
	failed := 0
	for _, rd := range res.Rounds {
		failed += rd.PublishErrors
		if rd.Published != 0 {
			t.Errorf("round %d: %d redirected publishes counted as accepted", rd.Round, rd.Published)
		}
	}
	if failed != 24 || res.Totals.Expected != 0 || res.Totals.Missing != 0 {
		t.Fatalf("%d publishes failed (want 24), totals %+v", failed, res.Totals)
	}
	want := "a publish was redirected (307 to " + other.URL + "/publish)"
	found := false
	for _, w := range res.Warnings {
		found = found || strings.HasPrefix(w, want) && !strings.Contains(w, "\n")
	}
	if !found {
		t.Fatalf("warnings %q, want one line starting %q", res.Warnings, want)
	}
}

// The publisher's own WebSocket, redirected: the run is refused in one
// line, and nothing reaches the other address.
func TestRedirectedPublisherUpgradeIsRefused(t *testing.T) {
	other, got := elsewhere(t)
	srv := redirecting(t, other.URL, http.StatusTemporaryRedirect, func(r *http.Request) bool {
		return r.URL.Query().Get("room") == "pub"
	})
	o := hostile(t, srv)
	o.Publish, o.PublishPath = "ws", "/ws?room=pub&token=t0k"
	_, err := Run(context.Background(), o)
	want := "the publisher's WebSocket upgrade was redirected (307 to " + other.URL
	if e := redirect.As(err); e == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err %v", err)
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
}

// The target's pprof endpoints, redirected: no profile is fetched from
// elsewhere, and the warnings name the Location.
func TestRedirectedPprofFetchIsRefused(t *testing.T) {
	other, got := elsewhere(t)
	srv := redirecting(t, other.URL, http.StatusTemporaryRedirect, func(r *http.Request) bool {
		return strings.HasPrefix(r.URL.Path, "/debug/pprof/")
	})
	o := options(t, srv)
	pprofURL, _ := o.Base.Parse("/debug/pprof/")
	o.Profile = &Profile{PprofURL: pprofURL}
	o.Rounds, o.Pause = 1, 0
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
	refused := "the pprof fetch was redirected (307 to " + other.URL
	for _, want := range []string{"no mutex profile: /debug/pprof/mutex: " + refused,
		"no goroutine count: /debug/pprof/goroutine: " + refused} {
		found := false
		for _, w := range res.Warnings {
			found = found || strings.HasPrefix(w, want)
		}
		if !found {
			t.Errorf("warnings %q, want %q", res.Warnings, want)
		}
	}
}
