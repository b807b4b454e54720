package report

import (
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/result"
)

// Reads that overlap a sync are told from the others; a clear slow-down
// is a stall, a few slow reads are not; a change never seen is lost.
func TestWritesOf(t *testing.T) {
	start := time.Unix(1000, 0)
	changes := []result.Change{
		{Path: "a.md", Permalink: "/a", Start: start.Add(2 * time.Second), Wrote: 1500 * time.Millisecond,
			Visible: map[string]time.Duration{result.PlacePage: 1600 * time.Millisecond}},
		{Path: "b.md", Permalink: "/b", Start: start.Add(6 * time.Second), Wrote: 1500 * time.Millisecond, Lost: []string{result.PlacePage}},
	}
	var reads []result.RequestTime
	for i := range 1000 { // 100 a second for 10 s: 5 ms, or 1 s while a sync runs
		due := start.Add(time.Duration(i) * 10 * time.Millisecond)
		lat := 5 * time.Millisecond
		for _, c := range changes {
			if !due.Before(c.Start) && due.Before(c.Start.Add(c.Wrote)) {
				lat = time.Second
			}
		}
		reads = append(reads, result.RequestTime{Due: due, Latency: lat})
	}
	w := WritesOf(changes, reads, start, 0.25)
	if w.Lost != 1 || w.During.P50 < 900 || w.Outside.P50 > 10 || !w.Stall {
		t.Errorf("%+v", w)
	}
	if len(w.Timeline) != 10 || !w.Timeline[2].Syncing || w.Timeline[0].Syncing || w.Timeline[2].P99 < 900 {
		t.Errorf("timeline %+v", w.Timeline)
	}
	says := strings.Join(w.Says(), "\n")
	for _, want := range []string{"1 of 2 writes were LOST", "reads stall while a sync runs", "page 1.60s"} {
		if !strings.Contains(says, want) {
			t.Errorf("says %q, want %q", says, want)
		}
	}
	// The same syncs without a slow-down: no stall claimed.
	for i := range reads {
		reads[i].Latency = 5 * time.Millisecond
	}
	if w := WritesOf(changes, reads, start, 0.25); w.Stall || strings.Contains(strings.Join(w.Says(), " "), "stall") {
		t.Errorf("no slow-down, yet %v", w.Says())
	}
}
