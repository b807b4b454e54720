package report

import "fmt"

// ProfilingOverhead is what --profile cost the target's throughput, when
// the run measured it (--profiling-overhead): legs of the microload with
// and without profiling, taking turns.
type ProfilingOverhead struct {
	LegS   float64       `json:"leg_s"`
	Rounds int           `json:"rounds"`
	Legs   []OverheadLeg `json:"legs"`
	OffRPS float64       `json:"off_rps"` // the median of the legs without profiling
	OnRPS  float64       `json:"on_rps"`  // and with it
	Loss   float64       `json:"loss"`    // 1 − on/off: the share of throughput profiling cost (negative: within the noise)
}

// OverheadLeg is one leg: ok replies a second.
type OverheadLeg struct {
	Profiled bool    `json:"profiled"`
	RPS      float64 `json:"rps"`
}

// Line is the overhead in words, "" when nothing was compared.
func (o *ProfilingOverhead) Line() string {
	if o == nil || o.OffRPS == 0 || o.OnRPS == 0 {
		return ""
	}
	return fmt.Sprintf("profiling cost the target %.1f%% of its throughput: %.0f ok/s without, %.0f with (medians of %d rounds "+
		"of %.0f s legs, taking turns)",
		100*o.Loss, o.OffRPS, o.OnRPS, o.Rounds, o.LegS)
}
