package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/probehq/probe/result"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// A stepped ramp (--steps) measures each rate as its own level, so a
// level's figures should not carry the requests the previous level left
// the server finishing (issue 25). With a Settler, each step is its own
// arrival run, and probe waits for a quiet target between them; the runs
// are then joined as one, on the schedule's clock. A continuous ramp
// (--ramp) has no such gaps: its rate rises without a pause, and a pause
// would drain the queue whose growth marks the knee.

// steppedRun runs l's steps one at a time, waiting on settle before each
// after the first; waits[i] is the wait before window i (nil for the
// first).
func steppedRun(ctx context.Context, l probes.ArrivalLoad, settle *Settler) (*result.ArrivalRun, []*report.Settle, error) {
	steps := l.Rates.Steps
	stop := l.Stop
	var joined *result.ArrivalRun
	var waits []*report.Settle
	for i, rate := range steps {
		var wait *report.Settle
		if i > 0 {
			if ctx.Err() != nil {
				break
			}
			wait = settle.Wait(ctx)
			if ctx.Err() != nil {
				break
			}
		}
		one := l
		one.Rates = result.Rates{Steps: []float64{rate}, Each: l.Rates.Each}
		var before []result.WindowStats
		if joined != nil {
			before = joined.Windows
		}
		if stop != nil {
			one.Stop = func(ws []result.WindowStats) string {
				return stop(append(append([]result.WindowStats{}, before...), shifted(ws, i, l.Rates.Each)...))
			}
		}
		run, err := one.Run(ctx)
		if err != nil {
			if joined == nil {
				return nil, nil, err
			}
			joined.Ended = fmt.Sprintf("step %d could not start: %v", i+1, err)
			break
		}
		waits = append(waits, wait)
		joined = joinRuns(joined, run, i, l.Rates.Each)
		if run.Ended != "" || len(run.Windows) == 0 {
			break
		}
	}
	return joined, waits, nil
}

// shifted is a step's windows on the whole schedule's clock: step i
// starts at i steps.
func shifted(ws []result.WindowStats, i int, each time.Duration) []result.WindowStats {
	out := make([]result.WindowStats, len(ws))
	for k, w := range ws {
		w.From += time.Duration(i) * each
		w.To += time.Duration(i) * each
		out[k] = w
	}
	return out
}

var windowFile = regexp.MustCompile(`-window-(\d+)\.`)

// joinRuns adds step i's run to the runs before it: its windows and
// samples move to the schedule's clock, its window profiles are renumbered
// and the whole-run profiles (mutex, block, wall) are merged.
func joinRuns(joined, run *result.ArrivalRun, i int, each time.Duration) *result.ArrivalRun {
	offset := time.Duration(i) * each
	if joined == nil {
		joined = &result.ArrivalRun{Start: run.Start, Raw: map[string][]byte{}}
	}
	base := len(joined.Windows)
	joined.Windows = append(joined.Windows, shifted(run.Windows, i, each)...)
	for _, s := range run.InFlight {
		s.At += offset
		joined.InFlight = append(joined.InFlight, s)
	}
	joined.Ended = run.Ended
	joined.Opened += run.Opened
	for _, w := range run.Warnings {
		joined.Warnings = result.AddWarning(joined.Warnings, w.Kind, w.Message)
	}
	joined.Mutex = mergeProfiles(joined.Mutex, run.Mutex)
	joined.Block = mergeProfiles(joined.Block, run.Block)
	joined.Wall = mergeProfiles(joined.Wall, run.Wall)
	for name, raw := range run.Raw {
		if m := windowFile.FindStringSubmatchIndex(name); m != nil {
			n, _ := strconv.Atoi(name[m[2]:m[3]])
			joined.Raw[name[:m[2]]+fmt.Sprintf("%02d", n+base)+name[m[3]:]] = raw
			continue
		}
		joined.Raw[name] = raw
	}
	for name, p := range map[string]*profile.Profile{"mutex.pb.gz": joined.Mutex, "block.pb.gz": joined.Block, "wall.pb.gz": joined.Wall} {
		if _, ok := joined.Raw[name]; ok && p != nil {
			var b bytes.Buffer
			if p.Write(&b) == nil {
				joined.Raw[name] = b.Bytes()
			}
		}
	}
	return joined
}

// mergeProfiles is a and b as one; either may be nil, and profiles that
// do not merge keep the first.
func mergeProfiles(a, b *profile.Profile) *profile.Profile {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	m, err := profile.Merge([]*profile.Profile{a, b})
	if err != nil {
		return a
	}
	return m
}
