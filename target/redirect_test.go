package target

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/redirect/redirecttest"
)

// Issue 34: no credential follows a redirect. Against a target that
// answers 3xx to another address (another port of 127.0.0.1: another
// origin, where Go's own client keeps even Authorization), the other
// address gets no request at all.

// moved is a target that answers every request 307 to another server,
// the same path; the test fails if that server gets a request.
func moved(t *testing.T) (target, other *url.URL) {
	other, _ = redirecttest.Elsewhere(t)
	return redirecttest.Mover(t, other), other
}

// The pprof fetches refuse a 3xx in one line naming the Location.
func TestPprofFetchRefusesRedirects(t *testing.T) {
	base, other := moved(t)
	pprofURL := base.JoinPath("/debug/pprof/")
	err := CheckPprof(context.Background(), pprofURL)
	want := pprofURL.String() + ": the pprof fetch was redirected (307 to " + other.String() + "/debug/pprof/)"
	if redirect.As(err) == nil || err.Error() != want+"; probe follows no redirect with its credentials or headers" {
		t.Errorf("CheckPprof: %v, want %q", err, want)
	}
	p := CaptureProfiles(context.Background(), ProfileOptions{PprofURL: pprofURL, Window: time.Second}, time.Second)
	found := false
	for _, w := range p.Warnings {
		found = found || strings.Contains(w.Message, "pprof/profile: the pprof fetch was redirected (307 to "+other.String())
	}
	if !found {
		t.Errorf("warnings %+v: none names the refused redirect", p.Warnings)
	}
}

// The settle wait's timed GET takes a 3xx as the reply it times.
func TestReplyTimeFollowsNoRedirect(t *testing.T) {
	u, _ := moved(t)
	secrets := []h1.Field{{Name: "X-API-Key", Value: "key"}, {Name: "Authorization", Value: "Bearer token"}}
	if _, err := ReplyTime(context.Background(), u, secrets, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}
