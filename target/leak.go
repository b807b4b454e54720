package target

import (
	"context"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/result"
)

// startLeaks reads the target's leaked goroutines now (its goroutineleak
// profile, which runs a GC that finds them), or, when it serves no such
// profile, its goroutine count; the returned function reads them again
// at the window's end and gives the leak check. A leak profile that
// cannot be read is one warning, and the counts stand in for it.
func startLeaks(ctx context.Context, o ProfileOptions,
	warn func(kind, format string, args ...any)) func() *result.Leaks {
	start, _, err := fetchProfile(ctx, o.PprofURL, result.LeakProfile, nil, o)
	if err == nil {
		return func() *result.Leaks {
			end, _, err := fetchProfile(context.WithoutCancel(ctx), o.PprofURL, result.LeakProfile, nil, o)
			if err != nil {
				warn("leak-profile", "the leak profile at the window's end: %s", textline.Of(err.Error(), 0))
				return nil
			}
			l := &result.Leaks{Source: result.LeakProfile, Before: goroutines(start), After: goroutines(end)}
			if grown, err := ProfileDelta(end, start); err == nil && len(grown.Sample) > 0 {
				l.Grown = grown
				l.Creators, _ = leakCreators(context.WithoutCancel(ctx), o) // the stacks stand without
			}
			return l
		}
	}
	if !strings.Contains(err.Error(), "status 404") {
		warn("leak-profile", "the target's /debug/pprof/%s is no profile (%s): goroutine counts stand in for it",
			result.LeakProfile, textline.Of(err.Error(), 0))
	}
	before, _, err := fetchProfile(ctx, o.PprofURL, "goroutine", nil, o)
	if err != nil {
		return func() *result.Leaks { return nil }
	}
	settle := o.LeakSettle
	if settle <= 0 {
		settle = 2 * time.Second
	}
	return func() *result.Leaks {
		end := context.WithoutCancel(ctx)
		select { // the requests in flight at the window's end finish
		case <-time.After(settle):
		case <-end.Done():
		}
		after, _, err := fetchProfile(end, o.PprofURL, "goroutine", nil, o)
		if err != nil {
			return nil
		}
		return &result.Leaks{Source: result.LeakGoroutines, Before: goroutines(before), After: goroutines(after),
			Settle: settle}
	}
}

// goroutines is how many goroutines a goroutine or leak profile counts.
func goroutines(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		if len(s.Value) > 0 {
			n += s.Value[0]
		}
	}
	return n
}

// Leaked is the target's leak profile now: the goroutines blocked forever
// (the profile runs a GC that finds them). An error says it serves none
// (a 404 before Go 1.27) or sent no profile; the read is bounded as every
// profile's is.
func Leaked(ctx context.Context, o ProfileOptions) (*profile.Profile, error) {
	if o.Slack <= 0 {
		o.Slack = 10 * time.Second
	}
	p, _, err := fetchProfile(ctx, o.PprofURL, result.LeakProfile, nil, o)
	return p, err
}
