package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/result"
)

// Writes is what reads did while probe changed notes (`--during-writes`):
// each change with its write time and freshness, the writes the target
// lost, and the read latency around the syncs.
type Writes struct {
	Rate     float64           `json:"rate"` // changes a second asked for
	Changes  []ChangeReport    `json:"changes"`
	Lost     int               `json:"lost"` // changes never seen on their page
	WriteMS  Spread            `json:"write_ms"`
	Fresh    map[string]Spread `json:"freshness_ms"` // place → time until a reader saw the change
	During   ReadSpread        `json:"reads_during_sync"`
	Stall    bool              `json:"stall"` // reads during syncs clearly slower (Stalled)
	Outside  ReadSpread        `json:"reads_outside_sync"`
	Timeline []SecondReport    `json:"timeline"`
	// SyncFindings are the findings of the CPU windows that overlap a
	// sync, alone: what a sync costs the target.
	SyncFindings []analyzers.Finding `json:"sync_findings,omitempty"`
}

// ChangeReport is one change.
type ChangeReport struct {
	Path      string             `json:"path"`
	Permalink string             `json:"permalink"`
	AtS       float64            `json:"at_s"` // from the start of the measured window
	WriteMS   float64            `json:"write_ms"`
	VisibleMS map[string]float64 `json:"visible_ms"`
	Lost      []string           `json:"lost,omitempty"`
	Error     string             `json:"error,omitempty"`
}

// Spread of a set of figures, in milliseconds.
type Spread struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	Max float64 `json:"max"`
}

// ReadSpread is reads' latency in a class of moments.
type ReadSpread struct {
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
}

// SecondReport is one second of the measured window.
type SecondReport struct {
	Second   int     `json:"second"` // from the start of the window, the first is 0
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	Syncing  bool    `json:"syncing"` // a write was in flight during this second
}

func spreadOf(ms []float64) Spread {
	if len(ms) == 0 {
		return Spread{}
	}
	sort.Float64s(ms)
	return Spread{N: len(ms), P50: quantile(ms, 0.5), Max: ms[len(ms)-1]}
}

// quantile of sorted values, nearest rank.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

type window struct{ from, to time.Time }

// WritesOf is the writes part of a report: changes made from start (the
// opening of the measured window) at rate, and the reads of the run.
func WritesOf(changes []result.Change, reads []result.RequestTime, start time.Time, rate float64) *Writes {
	w := &Writes{Rate: rate, Fresh: map[string]Spread{}}
	var syncs []window
	var writes []float64
	fresh := map[string][]float64{}
	for _, c := range changes {
		cr := ChangeReport{Path: c.Path, Permalink: c.Permalink, AtS: c.Start.Sub(start).Seconds(), WriteMS: Millis(c.Wrote.Microseconds()),
			VisibleMS: map[string]float64{}, Lost: c.Lost, Error: c.Err}
		for place, d := range c.Visible {
			cr.VisibleMS[place] = Millis(d.Microseconds())
			fresh[place] = append(fresh[place], cr.VisibleMS[place])
		}
		if c.Err == "" {
			writes = append(writes, cr.WriteMS)
			syncs = append(syncs, window{c.Start, c.Start.Add(c.Wrote)})
		}
		if c.Err != "" || slices.Contains(c.Lost, result.PlacePage) {
			w.Lost++
		}
		w.Changes = append(w.Changes, cr)
	}
	w.WriteMS = spreadOf(writes)
	for place, v := range fresh {
		w.Fresh[place] = spreadOf(v)
	}
	during := func(r result.RequestTime) bool {
		for _, s := range syncs {
			if r.Due.Before(s.to) && r.Due.Add(r.Latency).After(s.from) {
				return true
			}
		}
		return false
	}
	var in, out []float64
	seconds := map[int][]float64{}
	secErrs := map[int]int64{}
	for _, r := range reads {
		l := Millis(r.Latency.Microseconds())
		if during(r) {
			in = append(in, l)
			if r.Failed {
				w.During.Errors++
			}
		} else {
			out = append(out, l)
			if r.Failed {
				w.Outside.Errors++
			}
		}
		sec := int(r.Due.Sub(start) / time.Second)
		seconds[sec] = append(seconds[sec], l)
		if r.Failed {
			secErrs[sec]++
		}
	}
	w.During = readSpread(in, w.During.Errors)
	w.Outside = readSpread(out, w.Outside.Errors)
	w.Stall = w.Stalled()
	keys := make([]int, 0, len(seconds))
	for k := range seconds {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		v := seconds[k]
		sort.Float64s(v)
		from := start.Add(time.Duration(k) * time.Second)
		syncing := false
		for _, s := range syncs {
			syncing = syncing || s.from.Before(from.Add(time.Second)) && s.to.After(from)
		}
		w.Timeline = append(w.Timeline, SecondReport{Second: k, Requests: int64(len(v)), Errors: secErrs[k], P50: quantile(v, 0.5),
			P99: quantile(v, 0.99), Syncing: syncing})
	}
	return w
}

func readSpread(v []float64, errs int64) ReadSpread {
	sort.Float64s(v)
	return ReadSpread{Requests: int64(len(v)), Errors: errs, P50: quantile(v, 0.5), P99: quantile(v, 0.99)}
}

// Says is the writes part in words, for the table and report.md.
func (w *Writes) Says() []string {
	var out []string
	out = append(out, fmt.Sprintf("%d changes at %.3g a second; a write took %s (median), at most %s", len(w.Changes), w.Rate,
		FmtMS(w.WriteMS.P50), FmtMS(w.WriteMS.Max)))
	places := make([]string, 0, len(w.Fresh))
	for p := range w.Fresh {
		places = append(places, p)
	}
	sort.Strings(places)
	var fresh []string
	for _, p := range places {
		fresh = append(fresh, fmt.Sprintf("%s %s (at most %s)", p, FmtMS(w.Fresh[p].P50), FmtMS(w.Fresh[p].Max)))
	}
	if len(fresh) > 0 {
		out = append(out, "freshness, from the write until a reader saw it: "+strings.Join(fresh, ", "))
	}
	if w.Lost > 0 {
		out = append(out, fmt.Sprintf("%d of %d writes were LOST: never seen on their page", w.Lost, len(w.Changes)))
	} else if len(w.Changes) > 0 {
		out = append(out, "no write was lost")
	}
	out = append(out, fmt.Sprintf("reads during a sync: p50 %s, p99 %s (%d requests); outside: p50 %s, p99 %s (%d requests)",
		FmtMS(w.During.P50), FmtMS(w.During.P99), w.During.Requests, FmtMS(w.Outside.P50), FmtMS(w.Outside.P99), w.Outside.Requests))
	if w.Stalled() {
		if w.Outside.Requests == 0 {
			out = append(out, "every read overlapped a sync: reads wait for syncs")
		} else {
			out = append(out, fmt.Sprintf("reads stall while a sync runs: median ×%.0f, p99 ×%.0f", w.During.P50/w.Outside.P50,
				w.During.P99/w.Outside.P99))
		}
	}
	return out
}

// Stalled says whether reads during syncs were clearly slower than the
// others: their median three times and more, over 20 reads at least (a
// few slow reads near a sync are no stall).
func (w *Writes) Stalled() bool {
	if w.During.Requests < 20 {
		return false
	}
	if w.Outside.Requests == 0 {
		return true
	}
	return w.Outside.P50 > 0 && w.During.P50 > 3*w.Outside.P50 && w.During.P99 > 3*w.Outside.P99
}
