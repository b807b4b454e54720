package verdict

import (
	"math"

	"github.com/probehq/probe/lib/stats"
)

// slotModel is the noise of the work's CPU per request from one second to
// the next, and what is compared of each variant. The variants take
// turns, a second each, so a turn in which the machine ran slow slows
// them all: when the seconds' turns are known and their levels matter
// (stats.BlockedFit), they are taken out, and a variant's figure is its
// level against same-key's, turn for turn, in same-key's milliseconds.
// Else, and for a variant the fit leaves out, the variants' own spreads
// are pooled (stats.PooledSpread, on more degrees of freedom) and a
// variant's figure is its CPU per request.
type slotModel struct {
	work   Frame
	vs     []Variant
	spread stats.Spread   // the fit's when it is used, else the pooled one
	pooled stats.Spread   // the variants' own seconds, pooled
	fit    *stats.Blocked // nil: the turns are not used
	group  []int          // each variant's group in the fit (-1: none)
}

// newSlotModel fits the seconds of each variant that ran with samples
// enough of the work (a thin one's seconds are mostly sampling noise of
// its own), a second of no requests left out.
func newSlotModel(work Frame, vs []Variant) slotModel {
	m := slotModel{work: work, vs: vs, group: make([]int, len(vs))}
	var groups [][]float64
	var rounds [][]int
	blocked := true
	for i, v := range vs {
		m.group[i] = -1
		if v.Error != "" || i >= len(work.SlotCPUPerRequestMS) || work.Samples[i] < minWorkSamples {
			continue
		}
		var g []float64
		var r []int
		for k, x := range work.SlotCPUPerRequestMS[i] {
			if k < len(v.SlotRequests) && v.SlotRequests[k] > 0 {
				g = append(g, x)
				if k < len(v.SlotRounds) {
					r = append(r, v.SlotRounds[k])
				}
			}
		}
		m.group[i] = len(groups)
		groups, rounds = append(groups, g), append(rounds, r)
		blocked = blocked && len(r) == len(g)
	}
	m.pooled = stats.PooledSpread(groups)
	m.spread = m.pooled
	if blocked && len(vs) > 0 && m.group[0] == 0 {
		if fit := stats.BlockedFit(groups, rounds); fit.Measured() && fit.BlocksMatter {
			m.fit, m.spread = &fit, fit.Spread
		}
	}
	return m
}

// inFit: the turns are used and variant i has a level in their fit.
func (m slotModel) inFit(i int) bool {
	return m.fit != nil && m.group[i] >= 0 && m.fit.Level[m.group[i]] > 0
}

// figure is what is compared of variant i: its level turn for turn, in
// same-key's milliseconds, or its CPU per request outside the fit.
func (m slotModel) figure(i int) float64 {
	if m.inFit(i) {
		return m.fit.Level[m.group[i]] * m.work.CPUPerRequestMS[0]
	}
	return m.work.CPUPerRequestMS[i]
}

// margin is the change of variant i against the variants of base (each
// weighed by its requests, as the base's figure is) that the seconds'
// noise explains at slotConfidence, read as relativeChange reads one (0:
// not measured). In the fit it is the exact variance of the contrast,
// seconds missing included; outside it, the pooled spread's over the
// seconds each side is worth.
func (m slotModel) margin(base []int, i int) float64 {
	if m.inFit(i) {
		var reqs float64
		for _, j := range base {
			reqs += float64(m.vs[j].Requests)
		}
		c := make([]float64, len(m.fit.Level))
		c[m.group[i]] = 1
		inFit := reqs > 0
		for _, j := range base {
			if m.inFit(j) {
				c[m.group[j]] -= float64(m.vs[j].Requests) / reqs
			} else {
				inFit = false
			}
		}
		if f := m.fit.Factor(c); inFit && !math.IsNaN(f) {
			margin, _ := m.spread.MarginOf(slotConfidence, f)
			return math.Expm1(margin)
		}
	}
	var weights []float64
	for _, j := range base {
		weights = append(weights, slotWeights(m.vs[j])...)
	}
	margin, _ := m.pooled.Margin(slotConfidence, stats.EffectiveN(weights), slotsWorth(m.vs[i]))
	return math.Expm1(margin)
}

// slotWeights are the variant's seconds' requests, each second's weight
// in the variant's CPU per request.
func slotWeights(v Variant) []float64 {
	w := make([]float64, len(v.SlotRequests))
	for k, n := range v.SlotRequests {
		w[k] = float64(n)
	}
	return w
}

// slotsWorth is how many equal seconds the variant's are worth.
func slotsWorth(v Variant) float64 { return stats.EffectiveN(slotWeights(v)) }
