package production

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/lib/redirect/redirecttest"
)

// A Pyroscope or a Parca that answers its query 307 to another address
// (another port of 127.0.0.1: another origin, where Go's client keeps
// even Authorization): the query is refused in one line naming the
// Location, and the other address gets nothing — no X-API-Key, no
// tenant, no Authorization, no query.
func TestRedirectedProfilerQueryIsRefused(t *testing.T) {
	other, got := redirecttest.Elsewhere(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.String()+"/steal", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	for _, engine := range []string{Pyroscope, Parca} {
		for _, own := range []bool{false, true} { // a client of its own, or one given
			src, err := ParseSource(engine + "://" + strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			if own {
				src.Client = &http.Client{}
			}
			src.Header.Set("X-API-Key", "key")
			src.Header.Set("X-Scope-OrgID", "tenant")
			src.Header.Set("Authorization", "Bearer token")
			_, err = src.Fetch(context.Background(), Query{Service: "shop", Start: time.Now().Add(-time.Hour), End: time.Now()})
			if got.Load() != 0 {
				t.Fatalf("%s: the other address got %d requests", engine, got.Load())
			}
			want := src.String() + ": the profiler query was redirected (307 to " + other.String() + "/steal)"
			if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: err %v, want one line starting %q", engine, err, want)
			}
		}
	}
}
