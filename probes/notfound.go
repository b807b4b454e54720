package probes

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/probehq/probe/lib/textline"
)

// A microload finds its endpoint the way a crawler would (probes/web's
// discovery) or takes it from its options; what it could not find is a
// NotFound.

// NotFound says a microload could not find its endpoint: what it looked for
// and where. The command names the flag that points it there.
type NotFound struct {
	Microload string
	What      string   // "no search form or OpenSearch description"
	Tried     []string // what was asked, with its answer
}

func (e *NotFound) Error() string {
	s := e.Microload + ": " + e.What
	if len(e.Tried) > 0 {
		s += " (tried " + textline.Names(e.Tried, 200) + ")"
	}
	return s
}

// IsNotFound says whether err is a microload's NotFound.
func IsNotFound(err error) bool {
	var nf *NotFound
	return errors.As(err, &nf)
}

// Reframe names the microload that needed what discovery could not find.
func Reframe(err error, microload string) error {
	var nf *NotFound
	if errors.As(err, &nf) {
		return &NotFound{Microload: microload, What: nf.What, Tried: nf.Tried}
	}
	return err
}

// SafePath says whether p can go on a request line as it is: no spaces,
// no control characters, no bytes beyond ASCII (they must be escaped).
func SafePath(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return p != ""
}

// WantStatus checks a reply's status and, when ctypes are given, that its
// content type has one of them.
func WantStatus(r *Reply, status int, ctypes ...string) error {
	if r.Status != status {
		return fmt.Errorf("status %d", r.Status)
	}
	ct := r.Header("Content-Type")
	for _, want := range ctypes {
		if strings.Contains(ct, want) {
			return nil
		}
	}
	if len(ctypes) > 0 {
		return fmt.Errorf("content type %q, want %s", textline.Of(ct, 100), strings.Join(ctypes, " or "))
	}
	return nil
}

// QuoteBounded quotes what a target sent, escaped and cut short, for one
// line of an error.
func QuoteBounded(s string) string {
	const max = 80
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}
