package target

import (
	"context"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"
	"testing"
)

// Open finds a target on this machine by its socket, and checks the
// profiles asked for: a process listening in another process is its PID,
// a pprof index is the checked URL, and nothing is warned.
func TestOpenFindsTheProcessAndChecksItsProfiles(t *testing.T) {
	pid, addr := listenIn(t, "127.0.0.1:0", false)
	got := Open(context.Background(), Spec{URL: &url.URL{Scheme: "http", Host: addr}})
	if got.PID != pid || got.Unseen != "" || len(got.Warnings) != 0 || got.Pprof != nil {
		t.Errorf("a listener of pid %d: %+v", pid, got)
	}

	u := serve(t, pprofMux(pprof.Profile))
	index := u.JoinPath("/debug/pprof/")
	got = Open(context.Background(), Spec{URL: u, Pprof: index})
	if got.Pprof == nil || got.Pprof.String() != index.String() {
		t.Errorf("a pprof index: checked URL %v, warnings %v", got.Pprof, got.Warnings)
	}
	// The server is in probe's own process: not taken for the target.
	if w, ok := got.Warning("target-unseen"); !ok || got.PID != 0 || !strings.Contains(w.Message, "probe's own") {
		t.Errorf("a server in probe's process: pid %d, warnings %v", got.PID, got.Warnings)
	}
}

// A target without profiles is one no-pprof warning that ends with what
// the command goes without, and no checked URL; a target on another host
// is unseen, said why.
func TestOpenWarnsOfWhatItCannotSee(t *testing.T) {
	u := serve(t, http.NotFoundHandler())
	got := Open(context.Background(), Spec{URL: u, Pprof: u.JoinPath("/debug/pprof/"),
		WithoutProfiles: "the knee is still found"})
	w, ok := got.Warning("no-pprof")
	if !ok || got.Pprof != nil || !strings.Contains(w.Message, "answers 404 without the pprof index): the knee is "+
		"still found. ") || !strings.Contains(w.Message, "--pprof URL") {
		t.Errorf("no pprof: checked URL %v, warnings %v", got.Pprof, got.Warnings)
	}
	if got.Warnings[0].Kind != "no-pprof" {
		t.Errorf("warnings %v: want no-pprof first", got.Warnings)
	}

	far := Open(context.Background(), Spec{URL: &url.URL{Scheme: "http", Host: "192.0.2.1"}, Without: "no CPU of it"})
	w, ok = far.Warning("target-unseen")
	if !ok || far.PID != 0 || !strings.Contains(far.Unseen, "not an address of this machine") ||
		!strings.HasSuffix(w.Message, "): no CPU of it") {
		t.Errorf("another host: pid %d, unseen %q, warnings %v", far.PID, far.Unseen, far.Warnings)
	}
}

// A target probe started is its child: no socket is looked for.
func TestOpenTakesTheChildsProcess(t *testing.T) {
	child := startShell(t, sleeper, 0)
	got := Open(context.Background(), Spec{URL: &url.URL{Scheme: "http", Host: "192.0.2.1"}, Child: child})
	if got.PID != child.PID() || len(got.Warnings) != 0 {
		t.Errorf("a child: pid %d (want %d), warnings %v", got.PID, child.PID(), got.Warnings)
	}
}

func TestAddrNamesTheSchemesPort(t *testing.T) {
	for in, want := range map[string]string{"http://h": "h:80", "https://h": "h:443", "http://h:8080/x": "h:8080"} {
		u, _ := url.Parse(in)
		if got := Addr(u); got != want {
			t.Errorf("Addr(%s) = %s, want %s", in, got, want)
		}
	}
}
