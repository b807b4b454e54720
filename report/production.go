package report

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/probehq/probe/analyzers"
)

// Production is the fleet's profile a run's findings were weighed against
// (probe all --production): where it came from, and each finding's share
// of the fleet's CPU, in the order of the findings.
type Production struct {
	Source  string `json:"source"`  // pyroscope://… or parca://…
	Service string `json:"service"` // the service label's value
	Start   string `json:"start"`   // RFC 3339
	End     string `json:"end"`
	// Shares are, per finding, its share of the fleet's CPU (nil: the
	// finding names no frames to look for). They are written on the
	// findings themselves, as production_share.
	Shares []*float64 `json:"-"`
}

// fleetFinding is a finding with its share of the fleet's CPU.
type fleetFinding struct {
	analyzers.Finding
	ProductionShare *float64 `json:"production_share,omitempty"`
}

type runReportFields Run // Run without its MarshalJSON

// MarshalJSON writes the run as it is, each finding with its
// production_share when the run was weighed against a fleet.
func (r *Run) MarshalJSON() ([]byte, error) {
	if r.Production == nil || len(r.Production.Shares) != len(r.Findings) {
		return json.Marshal((*runReportFields)(r))
	}
	fs := make([]fleetFinding, len(r.Findings))
	for i, f := range r.Findings {
		fs[i] = fleetFinding{Finding: f, ProductionShare: r.Production.Shares[i]}
	}
	return json.Marshal(struct {
		*runReportFields
		Findings []fleetFinding `json:"findings"`
	}{(*runReportFields)(r), fs})
}

// fleetLine is a finding's share of the fleet's CPU in words, "" without.
func (r *Run) fleetLine(i int) string {
	p := r.Production
	if p == nil || i >= len(p.Shares) || p.Shares[i] == nil {
		return ""
	}
	return fmt.Sprintf("%.1f%% of the fleet's CPU (%s in %s, %s to %s)", 100**p.Shares[i], p.Service, p.Source,
		strings.TrimSuffix(p.Start, "Z"), strings.TrimSuffix(p.End, "Z"))
}
