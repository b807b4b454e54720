// Package redirect is probe's one policy for a server's 3xx: no
// credential and no header of the user's ever follows a redirect to
// another scheme, host or port. Go's client drops Authorization only
// when the host name changes (not the port), and a RoundTripper that adds
// headers adds them again on every hop, so every http.Client probe makes
// takes its CheckRedirect from here.
package redirect

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/probehq/probe/lib/textline"
)

// Error is a redirect probe refused: the status, where it pointed, and
// what request it answered.
type Error struct {
	What     string // "the upgrade", "a publish", "the profiler query"
	Status   int
	Location string // made a printable line
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s was redirected (%d to %s); probe follows no redirect "+
		"with its credentials or headers", e.What, e.Status, e.Location)
}

// Refuse is a CheckRedirect that follows no redirect: the client's Do
// returns an error wrapping *Error (errors.As finds it).
func Refuse(what string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		return refused(what, req)
	}
}

// SameOrigin is a CheckRedirect that follows at most max redirects, each
// to the first request's scheme, host and port, and refuses any other.
func SameOrigin(what string, max int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) == 0 || len(via) > max || !Same(via[0], req) {
			return refused(what, req)
		}
		return nil
	}
}

// Same reports whether two requests go to the same scheme, host and port
// (a missing port read as the scheme's default).
func Same(a, b *http.Request) bool {
	return a.URL.Scheme == b.URL.Scheme && a.URL.Hostname() == b.URL.Hostname() &&
		port(a) == port(b)
}

func port(r *http.Request) string {
	if p := r.URL.Port(); p != "" {
		return p
	}
	switch r.URL.Scheme {
	case "https", "wss":
		return "443"
	}
	return "80"
}

func refused(what string, req *http.Request) error {
	e := &Error{What: what, Location: textline.Of(req.URL.String(), 200)}
	if req.Response != nil {
		e.Status = req.Response.StatusCode
	}
	return e
}

// As is the refused redirect inside err, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
