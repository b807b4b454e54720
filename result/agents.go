package result

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// AgentOp is one row of probe agents' table: the connect of every agent, or one tool's calls.
type AgentOp struct {
	Name    string // "connect" or the tool's name
	Role    string // "" for connect
	Calls   int64  // measured calls, failed ones included
	Errors  map[string]int64
	Latency *hdrhistogram.Histogram // microseconds, failed calls included
	// Redirect is the first redirect probe refused (one line naming its
	// Location), "" when none: it says why transport failures happened.
	Redirect string
}

// Failed is how many of the calls failed.
func (op *AgentOp) Failed() int64 {
	var n int64
	for _, v := range op.Errors {
		n += v
	}
	return n
}

// AgentProject is one project's rows.
type AgentProject struct {
	Name string
	Ops  []*AgentOp // connect, then the tools in role order
}

// Agents is what probe agents' load measured and what its checks found.
type Agents struct {
	Endpoint string
	Agents   int
	Keys     int           // distinct keys the agents used
	Calls    string        // the calls' weights as --call takes them (write=30,search=47,read=23)
	Start    time.Time     // the measured window's opening
	Duration time.Duration // the measured window
	Projects []*AgentProject
	All      []*AgentOp // the projects' rows merged
	Checks   AgentChecks
	Ended    string   // empty when the run completed; else why it ended early
	MCP      *MCPLane // the lane and protocol version the agents' sessions spoke
}
