package target

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"github.com/probehq/probe/result"
)

// ProfileWindows profiles the target along an arrival load's windows,
// the first from start: a CPU profile and a wall-clock one (fgprof) of
// each window, aligned to it, so that the work whose share grows with the
// rate shows; and the mutex and block profiles of the whole run (the delta
// of their counts at both ends): the locks and waits that grow. got hears
// each window's profile as it is read (one of cpu and wall is set); the
// files, the mutex and block deltas and the warnings go into run.
func ProfileWindows(ctx context.Context, o ProfileOptions, start time.Time, windows []result.Window,
	run *result.ArrivalRun, got func(i int, cpu, wall *profile.Profile)) {
	if o.Slack <= 0 {
		o.Slack = 20 * time.Second
	}
	var mu sync.Mutex
	warn := func(kind, format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		run.Warnings = result.AddWarning(run.Warnings, kind, fmt.Sprintf(format, args...))
	}
	keep := func(name string, raw []byte) {
		mu.Lock()
		defer mu.Unlock()
		run.Raw[name] = raw
	}
	starts := readCountStarts(ctx, o)
	for i, w := range windows {
		at := start.Add(w.From)
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(at)):
		}
		if ctx.Err() != nil {
			break
		}
		secs := fmt.Sprint(int(math.Max(1, math.Round((w.To - w.From).Seconds()))))
		var wg sync.WaitGroup
		wg.Go(func() {
			prof, raw, err := fetchProfile(ctx, o.PprofURL, "profile", url.Values{"seconds": {secs}}, o)
			if err != nil {
				if ctx.Err() == nil {
					warn("profile-fetch", "CPU of window %d: %v", i+1, err)
				}
				return
			}
			keep(fmt.Sprintf("cpu-window-%02d.pb.gz", i+1), raw)
			got(i, prof, nil)
		})
		if o.FgprofURL != nil {
			wg.Go(func() {
				prof, raw, err := fetchProfile(ctx, o.FgprofURL, "", url.Values{"seconds": {secs}, "format": {"pprof"}}, o)
				if err != nil {
					if ctx.Err() == nil && i == 0 {
						warn("no-fgprof", "no wall-clock profile (fgprof): %v", err)
					}
					return
				}
				keep(fmt.Sprintf("wall-window-%02d.pb.gz", i+1), raw)
				got(i, nil, prof)
			})
		}
		wg.Wait()
	}
	// The ends of the mutex and block counts, also when the run ended
	// early.
	end := context.WithoutCancel(ctx)
	dsts := [len(starts)]**profile.Profile{&run.Mutex, &run.Block}
	for i, p := range starts {
		if p.err != nil {
			warn("no-"+p.name+"-profile", "the target's /debug/pprof/%s could not be read (%v): no %s profile", p.name, p.err, p.name)
			continue
		}
		delta, raw, err := countedSince(end, o, p.name, p.start)
		if err != nil {
			warn("no-"+p.name+"-profile", "the target's /debug/pprof/%s could not be read at the end (%v)", p.name, err)
			continue
		}
		if delta == nil {
			warn(p.name+"-profile-off", "the target records no %s events: its %s profile is off (Go's default); %s in the "+
				"target's main turns it on", p.name, p.name, p.how)
			continue
		}
		*dsts[i] = delta
		if raw != nil {
			keep(p.name+".pb.gz", raw)
		}
	}
}
