// Package analyzers turns profiles and what a run knows about its replies
// into findings: which work the target repeats per request, its share, its
// stacks, the evidence and the fix. It reads pprof profiles and its own
// Evidence type; it imports no other stage of probe.
package analyzers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
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
	// (the serving frames of the catalog) rather than of all the target's CPU.
	CPUShareOfRequests float64 `json:"cpu_share_of_requests"`
	// OwnFrame is the innermost frame of the target's own code over the
	// work: where the fix goes.
	OwnFrame string `json:"own_frame"`
	// Callees are, for repeated-work, the library calls under OwnFrame.
	Callees []Callee `json:"callees,omitempty"`
	// WaitShare is, for a contention finding, the share of the requests'
	// time spent waiting there.
	WaitShare float64 `json:"wait_share,omitempty"`
	// PartOf is the rule of the finding this one lies inside (most of its
	// CPU samples are also that finding's): its share is a part of that
	// share, not more CPU.
	PartOf string `json:"part_of,omitempty"`
	// CPUShareShared is, for a top-level finding, the part of CPUShare an
	// earlier top-level finding holds too: CPUShare stays what pprof
	// -focus shows, and top-level CPUShare − CPUShareShared add up to at
	// most the CPU.
	CPUShareShared float64 `json:"cpu_share_shared,omitempty"`
	// WorkFrame is the outermost frame of the rule's own frames over its
	// heaviest work (Frames[0] is the innermost): what the experiment
	// measures, all of the work under it. Empty: Frames[0].
	WorkFrame string `json:"-"`

	cpuSamples []int  // the CPU samples the finding counts (stack ids), when its detector says
	inputFrom  string // where the input of invariant-by-nature work comes from, when not a constant
}

// Unexplained is the target's own code that took CPU no finding explains:
// where a rule of the user's own (--rules) could look next.
type Unexplained struct {
	Function string   `json:"function"` // the innermost own function
	Path     []string `json:"path"`     // own frames from the outermost to it
	// Elided is how many own frames the path leaves out (a recursion
	// deeper than 64 own frames): its entry "… N frames …" stands for them.
	Elided   int     `json:"elided_frames,omitempty"`
	CPUShare float64 `json:"cpu_share"`
	// Callees are its heaviest calls into libraries, OwnShare the CPU in
	// its own code (no call), and LooksLike what the heaviest calls'
	// names say they do ("looks like it parses csv"), "" unless a call
	// holding a fifth of its CPU starts with a verb.
	Callees   []Callee `json:"callees,omitempty"`
	OwnShare  float64  `json:"own_share,omitempty"`
	LooksLike string   `json:"looks_like,omitempty"`
}

// PathTail is the innermost n frames of the path, joined with sep; a path
// cut short starts with how many outer frames it leaves out. Real servers
// wrap a handler in dozens of middleware frames: the inner ones say where.
func (u Unexplained) PathTail(n int, sep string) string {
	p := u.Path
	if n <= 0 || len(p) <= n {
		return strings.Join(p, sep)
	}
	outer := len(p) - n
	if u.Elided > 0 && !slices.Contains(p[outer:], elisionNote(u.Elided)) {
		outer += u.Elided - 1 // the note among the outer frames stands for that many
	}
	return fmt.Sprintf("(%s outer frames)", humanize.Comma(int64(outer))) + sep + strings.Join(p[len(p)-n:], sep)
}

// CallsInWords is the heaviest library calls with their shares, the
// function's own code's, and what the calls look like they do: "encoding/csv.(*Reader).ReadAll 84%: looks like
// it reads csv"; "" when none was seen.
func (u Unexplained) CallsInWords() string {
	var parts []string
	for _, c := range u.Callees {
		parts = append(parts, c.Function+" "+pct(c.CPUShare))
	}
	if u.OwnShare >= 0.01 {
		parts = append(parts, "its own code "+pct(u.OwnShare))
	}
	s := strings.Join(parts, ", ")
	if s != "" {
		s += " of the target's CPU"
	}
	if u.LooksLike != "" {
		if s != "" {
			s += ": "
		}
		s += u.LooksLike
	}
	return s
}

// Evidence is what a run knows beyond the profiles.
type Evidence struct {
	Endpoint   string
	MainModule string    // the target's main module, when known (frames.MainModule of its goroutine profile)
	Replies    []Replies // nil: no run (probe analyze), so no proof replies were invariant
	Requests   int64
	LogLines   int64 // lines the target wrote to stderr during the run, when probe started it
	LogBytes   int64
	Duration   time.Duration
}

// Replies are one request key's replies: how many distinct ones, and the
// evidence to compare them (the request and up to three of the replies).
type Replies struct {
	Key       string
	Op        string // the endpoint as the run named it
	Requests  int64
	Distinct  int
	Top       uint64   // digest of the most frequent reply: equal digests, equal bytes
	Input     bool     // the request carried a query or a body
	BodyBytes int      // the request body's size
	Request   string   // method, path and body
	Bodies    [][]byte // distinct replies, most frequent first
	// Headers are the inputs beyond the URL the key's requests carried:
	// header fields (Accept-Language, Cookie, Authorization, gRPC
	// metadata; not framing) and a JSON body's members by path
	// (arguments.region); HeadersVaried, those whose value differed
	// between them (a body member: between the operation's keys).
	Headers, HeadersVaried []string
}

func share(part, total int64) float64 {
	if total == 0 {
		return 0
	}
	return float64(part) / float64(total)
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
