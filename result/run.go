// Package result is the run's data: what a load measured, the analyzers'
// and the report writer's input. It imports no load stage (the layering
// test holds it), so that the writer compiles against the data alone.
package result

import (
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/probehq/probe/lib/textline"
)

// Run is what one microload measured: the load engine's output and the
// analyzers' and reports' input. Latencies are in microseconds.
type Run struct {
	Microload      string
	Target         string
	AcceptEncoding string // what the requests accepted: gzip by default, as real clients
	Protocol       string // HTTP/2 and how (Target.Protocol); "": HTTP/1.1
	Mode           string // "closed" (N clients) or "open" (fixed rate)
	Concurrency    int
	Rate           float64 // requests per second asked for, open loop
	Start          time.Time
	Duration       time.Duration // the measured window, warm-up excluded
	CPUWindow      time.Duration // what the CPU figures cover: the window until the last request ended (0: Duration)
	Timeout        time.Duration // one request's
	Ops            []*OpStats    // in order of first use
	Errors         map[string]int64
	Clients        int
	ConnsOpened    int
	ConnsDropped   int // kept-alive connections the target closed
	WireBytes      int64
	Decoded        int64 // bytes after Content-Encoding was undone
	Digests        []Digest
	GeneratorCPU   time.Duration // probe's own CPU over the measured window
	CPUs           int           // CPUs probe could run on
	MachineCPUs    int           // CPUs of the machine (lib/machine.CPUs, whatever the affinity): the most any figure in cores can be
	TargetProc     *ProcStats    // when the target is a local process (a child, or found by its socket)
	TargetRuntime  *Runtime      // its Go runtime: its process's, else what its HTTP endpoints say
	MCP            *MCPLane      // the MCP lane the load spoke (toolslist, an mcp: entry); nil: not MCP
	OthersCPU      float64       // cores used by other processes of the machine
	Warnings       []Warning
	Ended          string // empty when the run completed; else why it ended early
	TargetExit     *Exit  // how the target's process ended, when it died during the run
	Profiles       *Profiles
	LogLines       int64 // lines the target (a child) wrote to stderr during the window
	LogBytes       int64
	RequestTimes   []RequestTime // each measured request, with LoadOptions.RequestTimes (in no order)
	Seconds        []Second      // the measured window second by second (wider points past MaxSeconds)
}

// RequestTime is one measured request: when it was due and how long it
// took from then (open loop: coordinated omission corrected).
type RequestTime struct {
	Due     time.Time
	Latency time.Duration
	Failed  bool
}

// Exit is how a target process ended: its status as os/exec says it and the
// start of its stderr, for crash classification.
type Exit struct {
	Status string
	Stderr string
}

// OpStats are one operation's figures.
type OpStats struct {
	Name    string
	Setup   bool // session set-up: not part of the measured throughput
	Calls   int64
	Errors  int64
	Latency *hdrhistogram.Histogram // from the intended send time (open loop: corrected for coordinated omission)
	Service *hdrhistogram.Histogram // from the actual send time
	// Timeouts are the service times of the calls that got no reply within
	// the timeout (part of Service; nil: none).
	Timeouts *hdrhistogram.Histogram
}

// Digest is how many distinct replies one request key got, and the
// evidence to compare them: the request, the most frequent reply's digest
// and a few of the replies themselves (decoded, cut to 128 KB).
type Digest struct {
	Key       string
	Op        string // the operation (endpoint) the key belongs to
	Requests  int64
	Distinct  int
	Top       uint64   // digest of the most frequent reply; equal digests, equal bytes
	Input     bool     // the request carries a query or a body
	BodyBytes int      // the request body's size
	Request   string   // method, path and body, cut to 2 KB
	Bodies    [][]byte // up to three distinct replies, most frequent first; fewer when the run's budget ran out
	// Headers are the input header fields the key's requests carried
	// (IsInputHeader: Accept-Language, Cookie, Authorization, gRPC
	// metadata; not framing); HeadersVaried, those whose value differed
	// between them.
	Headers, HeadersVaried []string
	GRPC                   bool // the key's requests are gRPC calls (Content-Type application/grpc)
}

// Warning is something the reader must know to trust the figures.
type Warning struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// ProcStats summarise a local process sampled during the run.
type ProcStats struct {
	PID        int
	CPU        time.Duration
	MaxRSS     int64
	MaxThreads int
	MaxFDs     int
	Samples    int
	Children   time.Duration // the part of CPU its child processes used (live ones and those it waited for)
}

// NewHistogram is a latency histogram as the runs keep them: 1 µs to 5 min,
// three significant digits (histograms merge only at equal settings).
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
}

// Latency merges the measured (non-set-up) operations.
func (r *Run) Latency() *hdrhistogram.Histogram {
	h := NewHistogram()
	for _, op := range r.Ops {
		if !op.Setup {
			h.Merge(op.Latency)
		}
	}
	return h
}

// Requests counts measured calls, errors included.
func (r *Run) Requests() (calls, errors int64) {
	for _, op := range r.Ops {
		if !op.Setup {
			calls += op.Calls
			errors += op.Errors
		}
	}
	return calls, errors
}

// CPUPerRequest is probe's own CPU per measured call.
func (r *Run) CPUPerRequest() time.Duration {
	calls, _ := r.Requests()
	if calls == 0 {
		return 0
	}
	return r.GeneratorCPU / time.Duration(calls)
}

// CPUSpan is the wall time the run's CPU figures cover: from the window's
// opening until its last request ended, which may be up to a timeout past
// Duration (Duration itself when not recorded).
func (r *Run) CPUSpan() time.Duration {
	if r.CPUWindow > 0 {
		return r.CPUWindow
	}
	return r.Duration
}

// ErrorReasons lists error reasons, most frequent first.
func (r *Run) ErrorReasons() []string { return ByCount(r.Errors) }

// ByCount lists a tally's keys, most counted first, ties by key.
func ByCount(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := m[keys[i]], m[keys[j]]
		return a > b || a == b && keys[i] < keys[j]
	})
	return keys
}

// maxWarning bounds a warning's message.
const maxWarning = 2000

// Warn adds a warning, once.
func (r *Run) Warn(kind, msg string) { r.Warnings = AddWarning(r.Warnings, kind, msg) }

// AddWarning appends a warning unless ws has it already; its message is
// made one printable line (it may quote what a server sent).
func AddWarning(ws []Warning, kind, msg string) []Warning {
	msg = textline.Of(msg, maxWarning)
	for _, w := range ws {
		if w.Kind == kind && w.Message == msg {
			return ws
		}
	}
	return append(ws, Warning{Kind: kind, Message: msg})
}

// MCPLane is how an MCP load spoke to its server: the stateless lane of
// the 2026-07-28 protocol (server/discover, no session) or the session
// lane (initialize), and the protocol version measured.
type MCPLane struct {
	Lane            string `json:"lane"` // "stateless" or "session"
	ProtocolVersion string `json:"protocol_version"`
}
