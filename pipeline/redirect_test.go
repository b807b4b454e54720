package pipeline

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/probes"
)

// The experiment's CPU profile, from a target whose pprof answers 307 to
// another address (another port of 127.0.0.1: another origin): refused
// in one line naming the Location, and the other address gets nothing.
func TestExperimentProfileFollowsNoRedirect(t *testing.T) {
	var got atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/debug/pprof/")
	_, err := fetchCPUProfile(context.Background(), &probes.ProfileOptions{PprofURL: u}, time.Second)
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
	want := "/debug/pprof/profile: the pprof fetch was redirected (307 to " + other.URL + "/debug/pprof/profile?seconds=1)"
	if redirect.As(err) == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err %v, want %q", err, want)
	}
}
