// Package redirecttest is, for tests only, the hostile target of issue 34:
// one that answers 3xx to another address (another port of 127.0.0.1:
// another origin, where Go's own client keeps even Authorization), and
// that other address counting what it gets. Every client of probe's is
// held to it: the other address gets no request at all.
package redirecttest

import (
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/h2/h2ctest"
)

// Elsewhere is the other address, and the requests it got (over HTTP/1.1
// or h2c). The test fails at its end if it got any: a test need check
// the count itself only to say when.
func Elsewhere(t testing.TB) (*url.URL, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	u := h2ctest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }), true).URL
	t.Cleanup(func() {
		if got := n.Load(); got != 0 {
			t.Errorf("the other address got %d requests", got)
		}
	})
	return u, &n
}

// Mover answers every request 307 to the same path and query at other.
func Mover(t testing.TB, other *url.URL) *url.URL {
	t.Helper()
	return h2ctest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.String()+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}), true).URL
}

// Secrets are a target's standing header and Authorization: what must
// not reach the other address.
var Secrets = []h1.Field{{Name: "X-API-Key", Value: "key"}, {Name: "Authorization", Value: "Bearer token"}}
