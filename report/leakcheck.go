package report

import (
	"fmt"

	"github.com/probehq/probe/result"
)

// LeakCheck is how a profiled run looked for leaked goroutines: the
// runtime's leak profile, or (a target that serves none) the goroutine
// counts before the load and after a settle.
type LeakCheck struct {
	Source  string  `json:"source"` // "goroutineleak" or "goroutine-count"
	Before  int64   `json:"before"` // leaked goroutines (goroutineleak) or all goroutines at the window's start
	After   int64   `json:"after"`
	SettleS float64 `json:"settle_s,omitempty"` // goroutine-count: the wait after the load before the second count
}

// leakCheckOf is the report's leak check of a run (nil: none made).
func leakCheckOf(run *result.Run) *LeakCheck {
	if run.Profiles == nil || run.Profiles.Leaks == nil {
		return nil
	}
	l := run.Profiles.Leaks
	return &LeakCheck{Source: l.Source, Before: l.Before, After: l.After, SettleS: l.Settle.Seconds()}
}

// Line is the leak check as one sentence of report.md.
func (c *LeakCheck) Line() string {
	if c.Source == result.LeakProfile {
		return fmt.Sprintf("Leaked goroutines (the runtime's leak profile): %d before the load, %d after.", c.Before, c.After)
	}
	return fmt.Sprintf("Goroutines (the target serves no leak profile: counts only): %d before the load, %d %.0f s after.",
		c.Before, c.After, c.SettleS)
}
