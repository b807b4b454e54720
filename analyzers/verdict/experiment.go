// Package verdict is the experiment's judgement (DESIGN.md, "The
// experiment"): from the variants' figures, their CPU profiles and the
// replies they got, whether a finding's work stays put, moves with the
// request's input or cannot be told; and the arithmetic over the profiles
// and the run it rests on. Running the variants is the pipeline's.
package verdict

// Experiment is the short confirming run probe makes when a finding's class
// rests on thin evidence (DESIGN.md, "The experiment"): the endpoint's
// request sent again in ways that should not change the work (the same key
// again, a query parameter the server ignores) and in ways that should
// (another key of the same endpoint), each variant profiled as the main
// run is, and each finding's CPU per request compared across them.
type Experiment struct {
	Endpoint string  `json:"endpoint"`
	BudgetS  float64 `json:"budget_s"` // --experiment-time
	TookS    float64 `json:"took_s"`   // what the variants took, Prepare and profiles included
	// Clients is the experiment's closed loop: the main run's, fewer when
	// its rate would leave too many requests in flight at each change of
	// variant (0: open loop, the main run's rate).
	Clients  int       `json:"clients,omitempty"`
	Variants []Variant `json:"variants"`
	Findings []Finding `json:"findings"`
	// Skipped says why no variant ran (no key to vary, no time); the
	// findings keep the class the analysis gave them.
	Skipped string `json:"skipped,omitempty"`
}

// Variant is one run of the experiment.
type Variant struct {
	Name string `json:"name"` // same-key, ignored-param, other-key-1, …
	// ShouldMatter: the variant changes the request's input (another key);
	// false for the controls, which must leave the work as it is.
	ShouldMatter bool   `json:"should_matter"`
	Request      string `json:"request"` // method and path as sent, and what the variant changed beyond them
	// Varies are the inputs the variant changes, by name: header fields
	// (other-header, without-headers), probe's own parameter or field.
	Varies    []string `json:"varies,omitempty"`
	DurationS float64  `json:"duration_s"`
	Requests  int64    `json:"requests"`
	// SlotRequests are the requests sent in each of the variant's seconds.
	SlotRequests []int64 `json:"slot_requests,omitempty"`
	// SlotRounds are the turns of the variants' cycle those seconds were
	// measured in: every variant has a second in each, so a turn the
	// machine ran slow in slows them all alike (the judge takes it out).
	SlotRounds []int `json:"slot_rounds,omitempty"`
	// SlotOthersCores are the cores other processes than probe and the
	// target used in each of those seconds (none: the target's process
	// is not seen). BusySecondsLeftOut are the seconds
	// left out for a busier machine than machine.BusyCores.
	SlotOthersCores    []float64 `json:"slot_others_cores,omitempty"`
	BusySecondsLeftOut int       `json:"busy_seconds_left_out,omitempty"`
	// Calls are all the variant's calls in the experiment's load, the
	// seconds between its profiles too; Errors are the failed among them.
	Calls      int64   `json:"calls,omitempty"`
	Errors     int64   `json:"errors"`
	CPUSeconds float64 `json:"cpu_s"` // all the target's CPU in the variant's profile
	// ReplyDigest is the most frequent reply's digest (hex); StableDigest
	// the same reply's with nonces, long hex ids and timestamps masked.
	ReplyDigest  string `json:"reply_digest,omitempty"`
	StableDigest string `json:"reply_stable_digest,omitempty"`
	// DistinctReplies is how many different replies (byte for byte, as
	// sent) the variant's requests got.
	DistinctReplies int `json:"distinct_replies,omitempty"`
	// SameReply: the stable digest equals the reference's (for same-key,
	// the main run's reply to that key; for the others, same-key's).
	SameReply bool `json:"same_reply"`
	// Error: the variant could not run or be profiled, or it is void: its
	// requests got errors (Errors of them, the reasons given), and void
	// evidence is no evidence.
	Error string `json:"error,omitempty"`
}

// Finding is what the experiment measured of one finding.
type Finding struct {
	Rule        string `json:"rule"`
	ClassBefore string `json:"class_before"`
	Class       string `json:"class"`
	// Verdict: input-independent (load-time), moves-with-input,
	// replies-with-input or inputs-not-varied (cacheable), or inconclusive
	// (class kept).
	Verdict string  `json:"verdict"`
	Frames  []Frame `json:"frames"` // the finding's work first, then its own frame
	// Tolerance is the largest relative change of the work's CPU per
	// request that still counts as staying put (sampling noise included).
	Tolerance float64 `json:"tolerance"`
	// SlotNoise is the standard deviation of one second's CPU per request
	// of the work relative to its variant's, pooled over the variants (0:
	// too few seconds to measure it).
	SlotNoise float64 `json:"slot_noise"`
	Why       string  `json:"why"`
}

// Frame is one function's CPU per request in each variant, in
// the order of Experiment.Variants (0 for a variant that did not run).
type Frame struct {
	Frame           string    `json:"frame"`
	CPUPerRequestMS []float64 `json:"cpu_per_request_ms"`
	Samples         []int     `json:"samples"`
	// SlotCPUPerRequestMS is each variant's seconds' CPU per request, in
	// the order of the variant's SlotRequests (0 for a second of none).
	SlotCPUPerRequestMS [][]float64 `json:"slot_cpu_per_request_ms,omitempty"`
}
