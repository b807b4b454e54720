package result

import "time"

// FuzzField is one request header.
type FuzzField struct{ Name, Value string }

// FuzzRequest is a template filled with values: what goes on the wire.
type FuzzRequest struct {
	Method string
	Path   string
	Header []FuzzField
	Body   []byte
}

// FuzzInput is one filled template: a value per hole.
type FuzzInput struct {
	Template int
	Values   []string
}

// FuzzCrash is one distinct way the target died (or panicked), with the
// smallest input found that does it.
type FuzzCrash struct {
	Class      string
	Evidence   string
	Frames     []string
	Stderr     string
	Input      FuzzInput // the shrunk input
	Original   FuzzInput // the input as the search found it
	Method     string
	Path       string
	Header     []FuzzField // the template's headers, filled
	Body       []byte
	Hole       string // the hole the crash was narrowed to, when one alone crashes
	Endpoint   string
	FoundAfter time.Duration
	Seen       int  // times the search saw this crash
	Confirmed  bool // reproduced alone (or, when Concurrent, under concurrent copies)
	Concurrent bool // it needs concurrent requests to show
	Trials     int  // requests spent confirming and shrinking
	Shrink     string
	Also       []FuzzInput // other inputs that crash the same way (merged in)
	// Signature tells it from other crashes (its class and top frames; ""
	// unknown): the fuzzer merges two crashes of one signature.
	Signature string
}

// Fuzz is a fuzz run's outcome.
type Fuzz struct {
	Target    string
	Templates []FuzzTemplate // what was fuzzed; an input's Template indexes it
	Start     time.Time
	Search    time.Duration
	Shrinking time.Duration
	Inputs    int64
	Statuses  map[int]int64
	Failures  map[string]int64 // error replies and transport errors by reason
	Restarts  int
	Crashes   []*FuzzCrash
	Ended     string // why the run stopped early, if it did
	Hostile   int64  // inputs the target answered with an error reply (4xx) and lived
	Extremes  int    // extreme inputs tried before the random ones
	Unsent    int64  // drawn inputs the wire cannot carry, skipped without a request
	Refused   int64  // inputs a whole reply under 400 refused (a JSON-RPC error, an MCP isError result) and the target lived
	// LeakHunt says why leaks were not looked for, or what the search's
	// end showed that no input alone repeated ("": looked, as Crashes say).
	LeakHunt string
}

// Render is an input as the request it is.
func (r *Fuzz) Render(in FuzzInput) FuzzRequest {
	return r.Templates[in.Template].Request(in.Values)
}

// Request is the crash's request as sent.
func (c *FuzzCrash) Request() FuzzRequest {
	return FuzzRequest{Method: c.Method, Path: c.Path, Header: c.Header, Body: c.Body}
}

// FuzzTemplate is a request with holes, as the fuzzer filled it.
type FuzzTemplate interface {
	Request(values []string) FuzzRequest // the template with a value a hole
	String() string                      // the template as it was written
}
