package pipeline

import (
	"time"

	"github.com/probehq/probe/result"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// WritesReport is the writes part of a run's report (reads during writes):
// each change and how long it took to show, with the findings of the CPU
// windows that overlap a sync.
func WritesReport(run *result.Run, wl *probes.WriteLoad, rules []Rule) *report.Writes {
	changes := wl.Changes()
	w := report.WritesOf(changes, run.RequestTimes, run.Start, wl.Rate)
	if run.Profiles == nil {
		return w
	}
	var during []*profile.Profile
	for _, win := range run.Profiles.Windows {
		from := time.Unix(0, win.TimeNanos)
		to := from.Add(time.Duration(win.DurationNanos))
		for _, c := range changes {
			if c.Err == "" && c.Start.Before(to) && c.Start.Add(c.Wrote).After(from) {
				during = append(during, win)
				break
			}
		}
	}
	if len(during) == 0 {
		return w
	}
	cpu, err := profile.Merge(during)
	if err != nil {
		return w
	}
	w.SyncFindings = analyzers.Analyze(cpu, nil, analyzers.Evidence{Endpoint: "the syncs"}, rules).Findings
	return w
}
