package analyzers

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/probehq/probe/lib/frames"
)

// cheapStd are standard packages whose cost under a loop is the loop's: a
// walk that sorts, formats, compares and fills maps is still the walk (a
// loop that only formats shows no walk evidence and is no scan).
var cheapStd = map[string]bool{"sort": true, "strings": true, "strconv": true, "fmt": true, "time": true, "bytes": true, "unicode": true,
	"unicode/utf8": true, "maps": true, "slices": true, "sync": true, "sync/atomic": true, "math": true, "path": true,
	"internal/bytealg": true, "iter": true, "cmp": true}

// walkEvidence are the frames by which a loop shows that it walks a
// collection the server holds: map iteration and lookups, element
// comparisons and searches, sorting.
var walkEvidence = regexp.MustCompile(`^(runtime\.(mapiter|mapaccess|mapassign|makemap|cmpstring|memequal)|internal/runtime/maps\.|maps\.|strings\.(Contains|Index|EqualFold|HasPrefix|HasSuffix|Compare|Fields|Split)|bytes\.(Contains|Index|Equal|HasPrefix)|internal/bytealg\.|sort\.|slices\.)`)

// walkCand is an own function as a possible walk: its samples whose frames
// below it are only own code, the runtime and cheap standard packages.
type walkCand struct {
	part, walk, flat, depth int64
	chain                   []string
}

// walkCandidates are the own functions that may be walks, and every own
// function's CPU (all the samples under it, as pprof -focus counts it).
func walkCandidates(s *samples) (cands map[string]*walkCand, under map[string]int64) {
	cands, under = map[string]*walkCand{}, map[string]int64{}
	for _, st := range s.cpu {
		if s.stopped() {
			return nil, nil
		}
		counted := map[string]bool{}
		for i, fn := range st.funcs {
			if st.kinds[i] == frames.Own && !counted[fn] {
				counted[fn] = true
				under[fn] += st.value
			}
		}
		seen := map[string]bool{}
		walkAt := -1
		for j, fn := range st.funcs {
			if walkEvidence.MatchString(fn) {
				walkAt = j
				break
			}
		}
		for i := range st.funcs {
			fn := st.funcs[i]
			if seen[fn] || st.kinds[i] != frames.Own {
				continue
			}
			seen[fn] = true
			cheap := true
			for j := 0; j < i && cheap; j++ {
				switch st.kinds[j] {
				case frames.Own, frames.Runtime:
				case frames.Std:
					cheap = cheapStd[frames.PkgPath(st.funcs[j])]
				default:
					cheap = false
				}
			}
			if !cheap {
				continue
			}
			c := cands[fn]
			if c == nil {
				c = &walkCand{chain: callers(st, i)}
				cands[fn] = c
			}
			c.part += st.value
			if walkAt >= 0 && walkAt < i {
				c.walk += st.value
			}
			if i == 0 {
				c.flat += st.value // the loop's own body, not a callee's
			}
			c.depth += int64(i) * st.value
		}
	}
	return cands, under
}

// pickWalk names the walk by its evidence: of the functions that carry most
// of it (a caller and its callee carry the same samples), the deepest that
// runs code of its own (the loop's body), not the handler that calls the
// loop nor the helper the loop calls per element; else the deepest. A
// function left out by skip is no walk ("" when none is).
func pickWalk(cands map[string]*walkCand, skip func(fn string) bool) string {
	var bestWalk int64
	for fn, c := range cands {
		if 4*c.walk >= c.part && !skip(fn) {
			bestWalk = max(bestWalk, c.walk)
		}
	}
	var pick string
	var pickDepth float64
	pickLoop := false
	for fn, c := range cands {
		if 4*c.walk < c.part || float64(c.walk) < 0.97*float64(bestWalk) || bestWalk == 0 || skip(fn) {
			continue
		}
		d := float64(c.depth) / float64(c.part)
		loop := 20*c.flat >= c.part
		better := pick == "" || loop && !pickLoop || loop == pickLoop && (d < pickDepth || d == pickDepth && fn < pick)
		if better {
			pick, pickDepth, pickLoop = fn, d, loop
		}
	}
	return pick
}

// fullScan finds the target's own function whose cost is a walk over its
// data: the samples under it whose frames below it are only its own code,
// the runtime and cheap standard packages (no library doing "real" work),
// as seed 002's layout walking every note to find the feeds. A loop is
// taken for a walk only when its samples show collection work (map
// iteration and lookups, comparisons, searches, sorting) in at least a
// quarter of them: an arithmetic loop or a formatting loop shows none.
// A stream's send loop is no walk: a function that sends a stream's
// messages, or runs inside the callback that does, does its work per
// message sent (perMessage says so).
func fullScan(r *Rule, s *samples, ev Evidence, facts replyFacts) *Finding {
	cands, under := walkCandidates(s)
	if cands == nil {
		return nil
	}
	loop := findSendLoop(s)
	pick := pickWalk(cands, loop.skips(s))
	if pick == "" {
		return nil
	}
	c := cands[pick]
	// The walk is found on its own code's samples; its share is all the CPU
	// under the function, what the fix moves and what pprof -focus on it
	// shows (a library called per element is part of the walk's cost).
	own, cs := share(c.part, s.cpuTotal), share(under[pick], s.cpuTotal)
	if own < r.MinShare || c.part < minCPUEvidence {
		return nil
	}
	return &Finding{Rule: r.ID, CPUShare: cs, CPUShareOfRequests: share(servingUnder(s, pick), s.requestTotal),
		Frames: c.chain, OwnFrame: frames.DisplayName(pick),
		Evidence: fmt.Sprintf("%s: %s holds %s of the target's CPU, %s in its own code walking a collection (map and element "+
			"work in %s of those samples)",
			r.What, pick, pct(cs), pct(own), pct(share(c.walk, c.part)))}
}

// servingUnder is the CPU of the serving samples through fn, each counted
// once however often fn recurs (as pprof -focus counts it).
func servingUnder(s *samples, fn string) int64 {
	var v int64
	for _, st := range s.cpu {
		if st.serving && slices.Contains(st.funcs, fn) {
			v += st.value
		}
	}
	return v
}
