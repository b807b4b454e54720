// Package target is the server under load: its process (one probe started,
// or the one found by its socket), the CPU and network figures read of it,
// its profiles (checked, captured over a window, counted between two
// reads) and how long it takes to answer.
package target

import (
	"cmp"
	"context"
	"fmt"
	"net/url"

	"github.com/probehq/probe/result"
)

// Spec says which server is under load.
type Spec struct {
	URL   *url.URL // where it answers
	Child *Child   // its process when probe started it; nil: the process listening on URL's port, if on this machine
	Pprof *url.URL // its /debug/pprof/ (trailing slash), to check; nil: no profiles asked for
	// Without and WithoutProfiles end the target-unseen and no-pprof
	// warnings: what the command goes without (default: a load run's).
	Without, WithoutProfiles string
}

// Target is the server under load as probe found it.
type Target struct {
	URL    *url.URL
	Child  *Child
	PID    int    // its process on this machine; 0: not seen
	Unseen string // why PID is 0
	// Pprof is Spec.Pprof once it answered with the pprof index; nil when
	// no profiles were asked for, or they are not served (a no-pprof
	// warning says why).
	Pprof    *url.URL
	Warnings []result.Warning // no-pprof, target-chosen, target-unseen: in that order
	// Runtime is its Go runtime, read from its executable and environment
	// when its process is seen and probe may read them, else what its
	// HTTP endpoints say (RuntimeOverHTTP: figures unknown are empty).
	Runtime *result.Runtime
}

// Open finds the target's process and checks its profiles: the child probe
// started, or the process listening on the target's port when that is on
// this machine. It does not fail: what it cannot see is a warning.
func Open(ctx context.Context, s Spec) *Target {
	t := &Target{URL: s.URL, Child: s.Child}
	if s.Pprof != nil {
		if err := CheckPprof(ctx, s.Pprof); err != nil {
			t.warn("no-pprof", NoPprof(fmt.Sprintf("the target serves no profiles (%v): %s", err,
				cmp.Or(s.WithoutProfiles, "the run goes on without them"))))
		} else {
			t.Pprof = s.Pprof
		}
	}
	if s.Child != nil {
		t.PID = s.Child.PID()
		t.runtime(ctx, s)
		return t
	}
	l, err := FindListener(Addr(s.URL))
	if err != nil {
		t.Unseen = err.Error()
		t.warn("target-unseen", "the target's process cannot be seen ("+t.Unseen+"): "+cmp.Or(s.Without,
			"no target CPU, RSS, threads or open files, and no machine-busy figure"))
		t.Runtime = runtimeOverHTTPOnce(ctx, s.Pprof, t.Pprof, "its process is not seen")
		return t
	}
	t.PID = l.PID
	t.runtime(ctx, s)
	if l.Why != "" {
		t.warn("target-chosen", l.Why)
	}
	return t
}

// runtime reads the runtime of t's process, else asks its HTTP endpoints
// (RuntimeOverHTTP).
func (t *Target) runtime(ctx context.Context, s Spec) {
	rt, err := RuntimeOf(t.PID)
	if err != nil {
		rt = runtimeOverHTTPOnce(ctx, s.Pprof, t.Pprof, err.Error())
	}
	t.Runtime = rt
}

func (t *Target) warn(kind, message string) {
	t.Warnings = append(t.Warnings, result.Warning{Kind: kind, Message: message})
}

// Warning is t's warning of kind, if it has one.
func (t *Target) Warning(kind string) (result.Warning, bool) {
	for _, w := range t.Warnings {
		if w.Kind == kind {
			return w, true
		}
	}
	return result.Warning{}, false
}

// Addr is u's host:port, the scheme's port when it names none.
func Addr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return u.Host + ":443"
	}
	return u.Host + ":80"
}

// NoPprof is a no-pprof warning's message: why, then where a target's
// profiles usually are and the flag that says so.
func NoPprof(why string) string {
	return why + ". If its profiles are served elsewhere, say where with --pprof URL: net/http/pprof's " +
		"/debug/pprof/ on the server's own port, a separate admin or debug port (http://127.0.0.1:6060/debug/pprof/ " +
		"is the usual one), or Caddy's admin endpoint http://127.0.0.1:2019/debug/pprof/"
}
