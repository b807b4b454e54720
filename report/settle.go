package report

// Settle is the wait for a quiet target before a microload of probe all
// (issue 25): the server may still be finishing the requests the previous
// microload abandoned. Judged by the target's CPU when its process is on
// this machine ("cpu"), else by how fast a GET of the target answers
// ("reply"); Quiet false is also a target-busy warning.
type Settle struct {
	WaitedS      float64 `json:"waited_s"`
	JudgedBy     string  `json:"judged_by"`               // cpu, reply, or none (quiet could not be judged)
	IdleCores    float64 `json:"idle_cores"`              // the target's CPU before the first microload (0 unless by cpu)
	CoresAtStart float64 `json:"cores_at_start"`          // its CPU when this microload's wait began
	CoresAtEnd   float64 `json:"cores_at_end"`            // and when the wait ended
	IdleReplyMS  float64 `json:"idle_reply_ms,omitempty"` // by reply: GET's time before the first microload
	ReplyMS      float64 `json:"reply_ms,omitempty"`      // and its last time (0: no reply)
	Quiet        bool    `json:"quiet"`
	Note         string  `json:"note,omitempty"` // why quiet could not be judged, or what was seen
}
