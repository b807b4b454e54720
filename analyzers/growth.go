package analyzers

import (
	"fmt"
	"math"
)

// Growth is how a microload's CPU per request grew with the size of the
// target's data, when probe controlled that size (probe scale).
type Growth struct {
	Slope, Lo, Hi float64 // on log-log axes, with its 95% interval
	Shape         string  // constant, sublinear, linear, superlinear, unclear
	Size          string  // what grew: "the number of notes"
}

// WithGrowth adds the growth of the finding's microload to its evidence. A
// full scan's cost grows with the data it walks: a linear growth is the
// evidence it needs; a cost that does not grow argues against a scan of
// that data, and the finding is only info then.
func WithGrowth(f Finding, g Growth) Finding {
	if f.Rule != "per-request-full-scan" {
		return f
	}
	slope := fmt.Sprintf("slope %.2f", g.Slope)
	if !math.IsInf(g.Hi, 0) && !math.IsInf(g.Lo, 0) {
		slope += fmt.Sprintf(", 95%% interval %.2f to %.2f", g.Lo, g.Hi)
	}
	switch g.Shape {
	case "linear", "superlinear":
		f.Evidence += fmt.Sprintf("; its microload's CPU per request grows with %s (%s): the work walks the data", g.Size, slope)
	case "constant":
		f.Evidence += fmt.Sprintf("; but its microload's CPU per request does not grow with %s (%s): whatever it walks is not that data",
			g.Size, slope)
		f.Class = "info"
	default:
		f.Evidence += fmt.Sprintf("; its microload's CPU per request against %s: %s (%s)", g.Size, g.Shape, slope)
	}
	return f
}
