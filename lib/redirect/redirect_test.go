package redirect

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// capture counts every request it gets: a redirect's target that must
// receive nothing.
func capture(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func redirector(t *testing.T, to string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			w.Write([]byte("ok"))
			return
		}
		http.Redirect(w, r, to, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestRefuseSendsNothingElsewhere(t *testing.T) {
	other, got := capture(t)
	s := redirector(t, other.URL+"/steal")
	c := &http.Client{CheckRedirect: Refuse("the profiler query")}
	req, _ := http.NewRequest("POST", s.URL, strings.NewReader("secret body"))
	req.Header.Set("Authorization", "Bearer k")
	_, err := c.Do(req)
	e := As(err)
	if e == nil || e.Status != 307 || !strings.Contains(e.Location, "/steal") {
		t.Fatalf("err %v, want a refused 307 naming /steal", err)
	}
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
	if !strings.Contains(err.Error(), "the profiler query was redirected (307 to http://") {
		t.Fatalf("message %q", err)
	}
}

func TestSameOrigin(t *testing.T) {
	other, got := capture(t)
	// The same host on another port is another origin.
	s := redirector(t, other.URL+"/x")
	c := &http.Client{CheckRedirect: SameOrigin("a page", 10)}
	if _, err := c.Get(s.URL); As(err) == nil || got.Load() != 0 {
		t.Fatalf("another port: err %v, %d requests there", err, got.Load())
	}
	same := redirector(t, "/same")
	resp, err := c.Get(same.URL + "/start")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("same origin: %v %v", resp, err)
	}
	resp.Body.Close()
}

// Under Status a 3xx is the reply: nothing goes to its Location.
func TestStatusFollowsNothing(t *testing.T) {
	other, got := capture(t)
	s := redirector(t, other.URL+"/x")
	c := &http.Client{CheckRedirect: Status}
	req, _ := http.NewRequest("GET", s.URL, nil)
	req.Header.Set("X-API-Key", "k")
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != 307 || !strings.HasSuffix(resp.Header.Get("Location"), "/x") {
		t.Fatalf("want the 307 itself: %v %v", resp, err)
	}
	resp.Body.Close()
	if got.Load() != 0 {
		t.Fatalf("the other address got %d requests", got.Load())
	}
}
