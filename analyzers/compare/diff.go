package compare

import (
	"sort"

	"github.com/google/pprof/profile"
	"github.com/probehq/probe/analyzers"
)

// FuncDelta is one function's share of two profiles: flat (its own code)
// and cumulative (it and what it calls), before and after.
type FuncDelta struct {
	Function   string  `json:"function"`
	FlatBefore float64 `json:"flat_before"`
	FlatAfter  float64 `json:"flat_after"`
	CumBefore  float64 `json:"cum_before"`
	CumAfter   float64 `json:"cum_after"`
}

// Change is the cumulative share's move, in shares (0.1 is ten points).
func (d FuncDelta) Change() float64 { return d.CumAfter - d.CumBefore }

// HotPathDelta compares where two profiles spent their samples (CPU or
// allocation, the value named typ) and returns the n functions whose
// cumulative share grew most and the n whose share shrank most. Shares,
// not absolute values: two runs of different lengths compare as they are.
func HotPathDelta(before, after *profile.Profile, typ string, n int) (gainers, losers []FuncDelta) {
	fb, cb := funcShares(before, typ)
	fa, ca := funcShares(after, typ)
	return HotPathDeltaOf(fb, cb, fa, ca, n)
}

// HotPathDeltaOf is HotPathDelta on the functions' flat and cumulative
// shares of each side (FuncTotals divided by their total): a comparison
// that keeps these, not the profiles.
func HotPathDeltaOf(fb, cb, fa, ca map[string]float64, n int) (gainers, losers []FuncDelta) {
	names := map[string]bool{}
	for k := range cb {
		names[k] = true
	}
	for k := range ca {
		names[k] = true
	}
	all := make([]FuncDelta, 0, len(names))
	for name := range names {
		all = append(all, FuncDelta{Function: name, FlatBefore: fb[name], FlatAfter: fa[name], CumBefore: cb[name], CumAfter: ca[name]})
	}
	// By the size of the move, then by name for a stable order.
	sort.Slice(all, func(i, j int) bool {
		ci, cj := all[i].Change(), all[j].Change()
		if ci != cj {
			return ci > cj
		}
		return all[i].Function < all[j].Function
	})
	const minMove = 0.005 // half a point: below that it is sampling noise
	for _, d := range all {
		if len(gainers) < n && d.Change() >= minMove {
			gainers = append(gainers, d)
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		if d := all[i]; len(losers) < n && d.Change() <= -minMove {
			losers = append(losers, d)
		}
	}
	return gainers, losers
}

// funcShares are each function's flat and cumulative share of p.
func funcShares(p *profile.Profile, typ string) (flat, cum map[string]float64) {
	flat, cum, total := analyzers.FuncTotals(p, typ)
	if total == 0 {
		return map[string]float64{}, map[string]float64{}
	}
	for f := range flat {
		flat[f] /= total
	}
	for f := range cum {
		cum[f] /= total
	}
	return flat, cum
}

// RuleChange is a finding that one side has and the other has not.
type RuleChange struct {
	Microload string `json:"microload"`
	Rule      string `json:"rule"`
	Endpoint  string `json:"endpoint,omitempty"`
	Evidence  string `json:"evidence,omitempty"`
}

// FindingChanges compares the findings of repeated runs: a rule that at
// least two thirds of one side's runs found and at most a third of the
// other side's is fixed (gone after) or regressed (new after). The gap
// between the two keeps a finding that hovers at its threshold (found in
// about half the runs of either side) from being reported as a change.
func FindingChanges(microload string, before, after [][]analyzers.Finding) (fixed, regressed []RuleChange) {
	count := func(runs [][]analyzers.Finding) (map[string]int, map[string]analyzers.Finding) {
		n, ex := map[string]int{}, map[string]analyzers.Finding{}
		for _, fs := range runs {
			seen := map[string]bool{}
			for _, f := range fs {
				if f.Class == "info" || seen[f.Rule] {
					continue
				}
				seen[f.Rule] = true
				n[f.Rule]++
				ex[f.Rule] = f
			}
		}
		return n, ex
	}
	nb, eb := count(before)
	na, ea := count(after)
	most := func(k, runs int) bool { return runs > 0 && 3*k >= 2*runs }
	few := func(k, runs int) bool { return 3*k <= runs }
	for rule, k := range nb {
		if most(k, len(before)) && few(na[rule], len(after)) {
			fixed = append(fixed, RuleChange{Microload: microload, Rule: rule, Endpoint: eb[rule].Endpoint, Evidence: eb[rule].Evidence})
		}
	}
	for rule, k := range na {
		if most(k, len(after)) && few(nb[rule], len(before)) {
			regressed = append(regressed, RuleChange{Microload: microload, Rule: rule, Endpoint: ea[rule].Endpoint, Evidence: ea[rule].Evidence})
		}
	}
	byRule := func(cs []RuleChange) { sort.Slice(cs, func(i, j int) bool { return cs[i].Rule < cs[j].Rule }) }
	byRule(fixed)
	byRule(regressed)
	return fixed, regressed
}
