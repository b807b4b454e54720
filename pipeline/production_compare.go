package pipeline

import (
	"fmt"

	"github.com/probehq/probe/report/abreport"
	"github.com/probehq/probe/result"

	"github.com/dustin/go-humanize"

	"github.com/probehq/probe/analyzers/compare"
)

// CompareSide is one side of a production compare (compare.Side).
type CompareSide = compare.Side

// NewCompareSide is an empty side whose merged windows may hold up to
// maxSamples samples (pprofio.MaxEntries of --max-profile).
func NewCompareSide(maxSamples int64) *CompareSide { return compare.NewSide(maxSamples) }

// CompareProduction is probe compare --from: each side's windows are the
// samples; the metrics are the CPU shares (cumulative, in %) of the
// functions that take most of either side (compared), each tested with Mann-Whitney
// U across the windows (compare.Compare) and held to Holm's correction
// for testing that many at once, so an A/A comparison reads as noise.
// The report is probe compare's, with the differential flame graph.
func CompareProduction(service, beforeName, afterName string, before, after *CompareSide, warnings []result.Warning) (*abreport.AB, error) {
	c := compare.Production(service, before, after)
	files := map[string][]byte{}
	diffFlame(files, beforeName, afterName, c)
	ws := append([]result.Warning{}, warnings...)
	for i, side := range []*CompareSide{before, after} {
		if side.TooMany() {
			ws = append(ws, result.Warning{Kind: "no-diff-flame", Message: fmt.Sprintf(
				"%s: the windows merged hold over %s samples (one profile's bound, from --max-profile): no differential flame graph",
				[2]string{beforeName, afterName}[i], humanize.Comma(side.MaxSamples()))})
		}
	}
	ab := abreport.NewAB(beforeName, afterName, []compare.Comparison{c}, nil, files, nil, ws)
	// A geometric mean of functions' share ratios says nothing.
	ab.Geomean = map[string]float64{}
	return ab, nil
}
