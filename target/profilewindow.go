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
	startMutex, _, errM := fetchProfile(ctx, o.PprofURL, "mutex", nil, o)
	startBlock, _, errB := fetchProfile(ctx, o.PprofURL, "block", nil, o)
	return func() *result.Contention {
		c := &result.Contention{Raw: map[string][]byte{}}
		end := context.WithoutCancel(ctx)
		for _, p := range []struct {
			name  string
			start *profile.Profile
			err   error
			dst   **profile.Profile
		}{{"mutex", startMutex, errM, &c.Mutex}, {"block", startBlock, errB, &c.Block}} {
			if p.err != nil {
				c.Warnings = result.AddWarning(c.Warnings, "no-"+p.name+"-profile", fmt.Sprintf("the target's /debug/pprof/%s "+
					"could not be read (%v)", p.name, p.err))
				continue
			}
			last, _, err := fetchProfile(end, o.PprofURL, p.name, nil, o)
			if err != nil {
				continue
			}
			delta, err := ProfileDelta(last, p.start)
			if err != nil || len(delta.Sample) == 0 {
				continue // the target records none: Go's default
			}
			*p.dst = delta
			var b bytes.Buffer
			if delta.Write(&b) == nil {
				c.Raw[p.name+".pb.gz"] = b.Bytes()
			}
		}
		return c
	}
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
