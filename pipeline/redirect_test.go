package pipeline

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/redirect/redirecttest"
	"github.com/probehq/probe/target"
)

// The experiment's CPU profile, from a target whose pprof answers 307 to
// another address (another port of 127.0.0.1: another origin): refused
// in one line naming the Location, and the other address gets nothing.
func TestExperimentProfileFollowsNoRedirect(t *testing.T) {
	other, _ := redirecttest.Elsewhere(t)
	u, _ := url.Parse(redirecttest.Mover(t, other).String() + "/debug/pprof/")
	_, err := fetchCPUProfile(context.Background(), &target.ProfileOptions{PprofURL: u}, time.Second)
	want := "/debug/pprof/profile: the pprof fetch was redirected (307 to " + other.String() + "/debug/pprof/profile?seconds=1)"
	if redirect.As(err) == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err %v, want %q", err, want)
	}
}
