package rampreport

// The knee and what gave way, in words.

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/report"
)

// says puts the knee and what grew past it in words.
func (r *Ramp) says(k stats.Knee) []string {
	if len(r.Windows) == 0 {
		return []string{"no window was measured"}
	}
	var out []string
	switch {
	case !k.Found:
		last := r.Windows[len(r.Windows)-1]
		out = append(out, fmt.Sprintf("the system held every rate up to %s sessions a second: the knee lies above (ramp further)",
			rateWords(last.Offered)))
		return append(out, r.gaveWay(len(r.Windows)-1, max(0, len(r.Windows)-2))...)
	case k.Index < 0:
		out = append(out, fmt.Sprintf("the system did not hold even the first rate, %s sessions a second (%s): the knee lies below",
			rateWords(r.Windows[0].Offered), r.Windows[0].Why))
		return append(out, r.gaveWay(0, 0)...)
	}
	knee, past := r.Windows[k.Index], r.Windows[k.Past]
	out = append(out, fmt.Sprintf("the knee: %s sessions a second held (p99 %s, %.1f sessions in flight, Little's law %.1f); "+
		"past it, at %s a second, %s",
		rateWords(knee.Offered), report.FmtMS(knee.P99), knee.InFlightMean, knee.LittleL, rateWords(past.Offered), past.Why))
	return append(out, r.gaveWay(k.Past, k.Index)...)
}

// gaveWay says what grew from window a (held) to window b (past).
func (r *Ramp) gaveWay(past, held int) []string {
	p, h := r.Windows[past], r.Windows[held]
	var grew []string
	if p.InFlightGrowth > 0.5 {
		grew = append(grew, fmt.Sprintf("sessions in flight grow by %.0f a second", p.InFlightGrowth))
	}
	if r.SLOMS > 0 && p.P99 > r.SLOMS {
		grew = append(grew, fmt.Sprintf("p99 passes %s (%s)", report.FmtMS(r.SLOMS), report.FmtMS(p.P99)))
	} else if p.P99 > 2*h.P99 && p.P99 > 0 {
		grew = append(grew, fmt.Sprintf("p99 goes from %s to %s", report.FmtMS(h.P99), report.FmtMS(p.P99)))
	}
	if p.Started+p.Dropped > 0 && p.Failed > 0 {
		grew = append(grew, fmt.Sprintf("%.1f%% of sessions fail", 100*float64(p.Failed)/float64(p.Started+p.Dropped)))
	}
	var out []string
	if t, t0 := p.Target, h.Target; t != nil {
		grew = append(grew, fmt.Sprintf("target CPU %.0f%% of its cores", 100*t.CPUShare))
		if t0 != nil && t.RSSMB > 1.2*t0.RSSMB && t.RSSMB-t0.RSSMB > 20 {
			grew = append(grew, fmt.Sprintf("RSS from %.0f to %.0f MB", t0.RSSMB, t.RSSMB))
		}
		if t0 != nil && t.Threads > t0.Threads+4 {
			grew = append(grew, fmt.Sprintf("threads from %d to %d", t0.Threads, t.Threads))
		}
		if t0 != nil && t.Connections > 2*t0.Connections+4 {
			grew = append(grew, fmt.Sprintf("connections from %d to %d", t0.Connections, t.Connections))
		}
	}
	if len(grew) > 0 {
		out = append(out, fmt.Sprintf("at %s a second: %s", rateWords(p.Offered), strings.Join(grew, ", ")))
	}
	// The work whose share grew with the rate.
	if len(p.Top) > 0 && len(r.Windows[0].Top) > 0 {
		first := map[string]float64{}
		for _, s := range r.Windows[0].Top {
			first[s.Work] = s.Share
		}
		for _, s := range p.Top {
			if s.Work != "other" && s.Share-first[s.Work] >= 0.1 {
				out = append(out, fmt.Sprintf("%s took %.0f%% of the target's CPU at %s a second against %.0f%% at %s", s.Work, 100*s.Share,
					rateWords(p.Offered), 100*first[s.Work], rateWords(r.Windows[0].Offered)))
			}
		}
	}
	// Waiting with the CPU idle is no CPU limit: say what the requests
	// waited on.
	if t := p.Target; t != nil && t.CPUShare < 0.7 && len(r.WallStates) > 0 {
		kinds := make([]string, 0, len(r.WallStates))
		for k := range r.WallStates {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool { return r.WallStates[kinds[i]] > r.WallStates[kinds[j]] })
		if kinds[0] != "cpu" {
			out = append(out, fmt.Sprintf("the target's CPU is %.0f%% busy, so it is not the limit: requests spent %.0f%% of "+
				"their wall time waiting on %s (fgprof)", 100*t.CPUShare, 100*r.WallStates[kinds[0]], waitWords(kinds[0])))
		}
	}
	for _, f := range r.Findings {
		if f.Rule == "contention" {
			out = append(out, fmt.Sprintf("contention: %s", f.Evidence))
			break
		}
	}
	return out
}

func waitWords(kind string) string {
	switch kind {
	case "lock":
		return "a lock"
	case "network":
		return "sockets (a database, another service, or the client)"
	case "channel":
		return "channels (a pool or queue)"
	}
	return kind
}

func rateWords(v float64) string {
	if v == math.Trunc(v) || v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
