package analyzers

import (
	"fmt"
	"sort"
	"strings"

	"probe/analyzers/frames"
)

// byFrames measures a rule's work: the samples with one of its frames.
func byFrames(r *Rule, s *samples, _ Evidence) *Finding {
	return framesAtLeast(r, s, r.MinShare)
}

func framesAtLeast(r *Rule, s *samples, minShare float64) *Finding {
	var cpuPart, reqPart, allocPart int64
	heaviest := map[string]int64{}
	chains := map[string][]string{}
	for _, st := range s.cpu {
		i := r.matchAt(st)
		if i < 0 {
			continue
		}
		cpuPart += st.value
		if st.serving {
			reqPart += st.value
		}
		chain := callers(st, i)
		key := strings.Join(chain, "\n")
		heaviest[key] += st.value
		chains[key] = chain
	}
	cpuChains := len(chains) > 0
	for _, st := range s.allocs {
		if i := r.matchAt(st); i >= 0 {
			allocPart += st.value
			if !cpuChains { // no CPU sample shows the work: show where it allocates
				chain := callers(st, i)
				key := strings.Join(chain, "\n")
				heaviest[key] += st.value
				chains[key] = chain
			}
		}
	}
	cs, as := share(cpuPart, s.cpuTotal), share(allocPart, s.allocTotal)
	cpuShown := cs >= minShare && cpuPart >= minCPUEvidence
	if !cpuShown && as < minShare {
		return nil
	}
	f := &Finding{Rule: r.ID, CPUShare: cs, AllocShare: as, CPUShareOfRequests: share(reqPart, s.requestTotal), Frames: heaviestChain(heaviest, chains)}
	f.Evidence = fmt.Sprintf("%s: %s of the target's CPU (%s of the CPU serving requests), %s of its allocations", r.What, pct(cs), pct(f.CPUShareOfRequests), pct(as))
	return f
}

// callers is what a finding shows of a stack: the matched frame (at i) and a
// few callers, then, when it is further up, the first frame of the target's
// own code, where the fix goes.
func callers(s stack, i int) []string {
	var out []string
	j := i
	for ; j < len(s.funcs) && len(out) < 4; j++ {
		if strings.HasPrefix(s.funcs[j], "runtime.") && len(out) > 0 {
			continue
		}
		out = append(out, frames.DisplayName(s.funcs[j]))
	}
	for k := i; k < len(s.funcs); k++ {
		if frames.Kind(s.funcs[k], s.files[k]) != frames.Own {
			continue
		}
		if k >= j {
			if k > j {
				out = append(out, "…")
			}
			out = append(out, frames.DisplayName(s.funcs[k]))
			if k+1 < len(s.funcs) && frames.Kind(s.funcs[k+1], s.files[k+1]) == frames.Own {
				out = append(out, frames.DisplayName(s.funcs[k+1]))
			}
		}
		break
	}
	return out
}

func heaviestChain(weights map[string]int64, chains map[string][]string) []string {
	best, bestW := "", int64(-1)
	for k, w := range weights {
		if w > bestW || w == bestW && k < best {
			best, bestW = k, w
		}
	}
	return chains[best]
}

// cheapStd are standard packages whose cost under a loop is the loop's: a
// walk that formats, sorts and fills maps is still the walk.
var cheapStd = map[string]bool{"sort": true, "strings": true, "strconv": true, "time": true, "bytes": true, "unicode": true,
	"unicode/utf8": true, "maps": true, "slices": true, "sync": true, "sync/atomic": true, "math": true, "fmt": true, "path": true}

// fullScan finds the target's own function whose cost is its own loop: the
// samples under it whose frames below it are only its own code, the runtime
// and cheap standard packages (no library doing "real" work), as seed 002's
// layout walking every note to find the feeds.
func fullScan(r *Rule, s *samples, _ Evidence) *Finding {
	type cand struct {
		part, depth int64
		chain       []string
	}
	cands := map[string]*cand{}
	for _, st := range s.cpu {
		seen := map[string]bool{}
		for i := range st.funcs {
			fn := st.funcs[i]
			if seen[fn] || frames.Kind(fn, st.files[i]) != frames.Own {
				continue
			}
			seen[fn] = true
			cheap := true
			for j := 0; j < i && cheap; j++ {
				switch frames.Kind(st.funcs[j], st.files[j]) {
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
				c = &cand{chain: callers(st, i)}
				cands[fn] = c
			}
			c.part += st.value
			c.depth += int64(i) * st.value
		}
	}
	var bestPart int64
	for _, c := range cands {
		bestPart = max(bestPart, c.part)
	}
	if share(bestPart, s.cpuTotal) < r.MinShare || bestPart < minCPUEvidence {
		return nil
	}
	// Of the functions that carry the walk (a caller and its callee carry the
	// same samples), name the deepest: the loop itself.
	var pick string
	var pickDepth float64
	for fn, c := range cands {
		if float64(c.part) < 0.97*float64(bestPart) {
			continue
		}
		d := float64(c.depth) / float64(c.part)
		if pick == "" || d < pickDepth || d == pickDepth && fn < pick {
			pick, pickDepth = fn, d
		}
	}
	c := cands[pick]
	cs := share(c.part, s.cpuTotal)
	return &Finding{Rule: r.ID, CPUShare: cs, Frames: c.chain,
		Evidence: fmt.Sprintf("%s: %s spends %s of the target's CPU in its own code, maps and slices, with no library doing the work", r.What, pick, pct(cs))}
}

// logStorm measures logging whatever its share (lines counted on the
// target's stderr can show a storm that costs little CPU), adds what probe
// counted, and keeps the finding when logging is costly or frequent.
func logStorm(r *Rule, s *samples, ev Evidence) *Finding {
	f := framesAtLeast(r, s, 0)
	if f == nil {
		return nil
	}
	storm := f.CPUShare >= r.MinShare
	if ev.Requests > 0 && ev.LogLines > 0 {
		perReq := float64(ev.LogLines) / float64(ev.Requests)
		f.Evidence += fmt.Sprintf("; the target wrote %d lines (%.1f MB) to stderr during the run, %.1f a request", ev.LogLines, float64(ev.LogBytes)/1e6, perReq)
		storm = storm || perReq >= 0.5
	}
	if !storm || f.CPUShare == 0 && ev.LogLines == 0 {
		return nil
	}
	return f
}

// gcPressure measures the collector's share by its frames and names the
// top allocation sites, where the fix starts.
func gcPressure(r *Rule, s *samples, _ Evidence) *Finding {
	f := byFrames(r, s, Evidence{})
	if f != nil {
		f.Evidence += "; top allocation sites: " + topAllocSites(s.allocs, s.allocTotal, 3)
	}
	return f
}

func topAllocSites(allocs []stack, total int64, n int) string {
	flat := map[string]int64{}
	for _, s := range allocs {
		for i, fn := range s.funcs {
			if frames.Kind(fn, s.files[i]) != frames.Runtime {
				flat[fn] += s.value
				break
			}
		}
	}
	names := make([]string, 0, len(flat))
	for fn := range flat {
		names = append(names, fn)
	}
	sort.Slice(names, func(i, j int) bool {
		return flat[names[i]] > flat[names[j]] || flat[names[i]] == flat[names[j]] && names[i] < names[j]
	})
	var parts []string
	for _, fn := range names[:min(n, len(names))] {
		parts = append(parts, fmt.Sprintf("%s (%s)", fn, pct(share(flat[fn], total))))
	}
	if len(parts) == 0 {
		return "no allocation profile"
	}
	return strings.Join(parts, ", ")
}
