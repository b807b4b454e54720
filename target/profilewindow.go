package target

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/google/pprof/profile"
	"github.com/probehq/probe/result"
)

// StartContention reads the target's mutex and block counts now; the
// returned function reads them again and gives what was counted between.
func StartContention(ctx context.Context, o ProfileOptions) func() *result.Contention {
	if o.Slack <= 0 {
		o.Slack = 20 * time.Second
	}
	starts := readCountStarts(ctx, o)
	return func() *result.Contention {
		c := &result.Contention{Raw: map[string][]byte{}}
		end := context.WithoutCancel(ctx)
		dsts := [len(starts)]**profile.Profile{&c.Mutex, &c.Block}
		for i, p := range starts {
			if p.err != nil {
				c.Warnings = result.AddWarning(c.Warnings, "no-"+p.name+"-profile", fmt.Sprintf("the target's /debug/pprof/%s "+
					"could not be read (%v)", p.name, p.err))
				continue
			}
			if delta, raw, _ := countedSince(end, o, p.name, p.start); delta != nil { // none: Go's default
				*dsts[i] = delta
				if raw != nil {
					c.Raw[p.name+".pb.gz"] = raw
				}
			}
		}
		return c
	}
}

// countStart is a cumulative profile (mutex, block) as read at a run's
// start, or why it could not be, and what in the target's main turns it on.
type countStart struct {
	name  string
	start *profile.Profile
	err   error
	how   string
}

// readCountStarts reads the mutex and block profiles at a run's start, in
// that order.
func readCountStarts(ctx context.Context, o ProfileOptions) [2]countStart {
	startMutex, _, errM := fetchProfile(ctx, o.PprofURL, "mutex", nil, o)
	startBlock, _, errB := fetchProfile(ctx, o.PprofURL, "block", nil, o)
	return [2]countStart{
		{"mutex", startMutex, errM, "runtime.SetMutexProfileFraction(5)"},
		{"block", startBlock, errB, "runtime.SetBlockProfileRate(100000) (one event per 100 µs blocked)"},
	}
}

// countedSince reads a cumulative profile's (mutex, block) end and gives
// what it counted since start, with the delta's bytes (none when they
// cannot be written); no delta and no error when it counted nothing (the
// profile is off, Go's default), an error when the end could not be read.
func countedSince(end context.Context, o ProfileOptions, name string, start *profile.Profile) (*profile.Profile, []byte, error) {
	last, _, err := fetchProfile(end, o.PprofURL, name, nil, o)
	if err != nil {
		return nil, nil, err
	}
	delta, err := ProfileDelta(last, start)
	if err != nil || len(delta.Sample) == 0 {
		return nil, nil, nil
	}
	var b bytes.Buffer
	if delta.Write(&b) != nil {
		return delta, nil, nil
	}
	return delta, b.Bytes(), nil
}

// ProfileDelta is last minus first, samples that did not change left out:
// what a cumulative profile (mutex, block) counted in between.
func ProfileDelta(last, first *profile.Profile) (*profile.Profile, error) {
	if first == nil || len(first.Sample) == 0 {
		return last, nil
	}
	neg := first.Copy()
	neg.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{last, neg})
	if err != nil {
		return nil, err
	}
	kept := d.Sample[:0]
	for _, s := range d.Sample {
		for _, v := range s.Value {
			if v > 0 {
				kept = append(kept, s)
				break
			}
		}
	}
	d.Sample = kept
	return d, nil
}
