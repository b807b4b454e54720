package pipeline

import (
	"context"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/target"
)

// abSettle is the quiet target of an A/B session: both versions run side
// by side, so before each run probe waits for the process the previous
// run loaded (each version's idle level taken before its first run).
// Waiting on the last one loaded keeps both quiet: the other had its wait
// when it was the last.
type abSettle struct {
	bound    time.Duration
	settlers map[*target.Child]*Settler // a restarted version is a new child
	last     *Settler
}

// before is the wait before a run of child: nil before the first run, or
// when --settle is 0.
func (s *abSettle) before(ctx context.Context, child *target.Child, t *probes.Target) *report.Settle {
	if s.bound <= 0 {
		return nil
	}
	var st *report.Settle
	if s.last != nil {
		st = s.last.Wait(ctx)
	}
	if s.settlers == nil {
		s.settlers = map[*target.Child]*Settler{}
	}
	if _, ok := s.settlers[child]; !ok && ctx.Err() == nil {
		se := NewSettler(t, s.bound)
		se.Baseline(ctx)
		s.settlers[child] = se
	}
	return st
}

// ran says a run of child has loaded it.
func (s *abSettle) ran(child *target.Child) {
	if se, ok := s.settlers[child]; ok {
		s.last = se
	}
}
