package mcp

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// The session the fuzzer opens on each fresh process follows no redirect
// (lib/redirect's policy): a server that answers initialize with a 307
// elsewhere gets an error, and elsewhere gets no POST of probe's.
func TestOpenSessionFollowsNoRedirect(t *testing.T) {
	var hit atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Add(1) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	s := &FuzzServer{Lane: Lane{Version: sessionVersion}, Path: "/mcp"}
	if _, err := s.OpenSession(srv.URL, 5*time.Second); err == nil {
		t.Error("a session opened through a redirect")
	}
	if hit.Load() != 0 {
		t.Errorf("the redirect's target got %d requests", hit.Load())
	}
}
