// Package analyzers turns profiles and what a run knows about its replies
// into findings: which work the target repeats per request, its share, its
// stacks, the evidence and the fix. It reads pprof profiles and its own
// Evidence type; it imports no other stage of probe.
package analyzers

import (
	"fmt"
	"time"
)

// Finding is one kind of work the profiles show, with its share, where it
// sits, why probe believes what it says about it and what to do (DESIGN.md).
type Finding struct {
	Rule       string   `json:"rule"`
	Class      string   `json:"class"`
	Severity   string   `json:"severity"`
	CPUShare   float64  `json:"cpu_share"`
	AllocShare float64  `json:"alloc_share"`
	Frames     []string `json:"frames"`
	Endpoint   string   `json:"endpoint"`
	Evidence   string   `json:"evidence"`
	Suggestion string   `json:"suggestion"`
	// CPUShareOfRequests is the share of the CPU spent under request handling
	// (net/http's conn.serve) rather than of all the target's CPU.
	CPUShareOfRequests float64 `json:"cpu_share_of_requests"`
}

// Evidence is what a run knows beyond the profiles.
type Evidence struct {
	Endpoint string
	Replies  []Replies // nil: no run (probe analyze), so no proof replies were invariant
	Requests int64
	LogLines int64 // lines the target wrote to stderr during the run, when probe started it
	LogBytes int64
	Duration time.Duration
}

// Replies is how many distinct replies one request key got.
type Replies struct {
	Key      string
	Requests int64
	Distinct int
}

// replyInvariance says whether every request key got one reply.
func (e Evidence) replyInvariance() (invariant bool, why string) {
	if e.Replies == nil {
		return false, "no run to show that the replies did not change (profiles analysed alone)"
	}
	keys, varying := 0, 0
	var requests int64
	for _, d := range e.Replies {
		if d.Requests < 2 {
			continue
		}
		keys++
		requests += d.Requests
		if d.Distinct > 1 {
			varying++
		}
	}
	switch {
	case keys == 0:
		return false, "too few requests per key to tell whether the replies change"
	case varying > 0:
		return false, fmt.Sprintf("%d of %d request keys got varying replies", varying, keys)
	}
	return true, fmt.Sprintf("each of %d request keys got the same reply every time (%d requests)", keys, requests)
}

func share(part, total int64) float64 {
	if total == 0 {
		return 0
	}
	return float64(part) / float64(total)
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
