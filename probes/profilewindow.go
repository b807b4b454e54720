package probes

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/google/pprof/profile"
)

// CaptureProfiles profiles the target for d as a run's measured window
// does, for a load that is not the engine's (probe agents' MCP sessions).
func CaptureProfiles(ctx context.Context, o ProfileOptions, d time.Duration) *Profiles {
	return captureProfiles(ctx, o, d)
}

// Contention is what a target's mutex and block profiles counted over a
// window: the deltas of their counts at both ends (nil: not recorded).
type Contention struct {
	Mutex, Block *profile.Profile
	Raw          map[string][]byte
	Warnings     []Warning
}

// StartContention reads the target's mutex and block counts now; the
// returned function reads them again and gives what was counted between.
func StartContention(ctx context.Context, o ProfileOptions) func() *Contention {
	if o.Slack <= 0 {
		o.Slack = 20 * time.Second
	}
	startMutex, _, errM := fetchProfile(ctx, o.PprofURL, "mutex", nil, o)
	startBlock, _, errB := fetchProfile(ctx, o.PprofURL, "block", nil, o)
	return func() *Contention {
		c := &Contention{Raw: map[string][]byte{}}
		end := context.WithoutCancel(ctx)
		for _, p := range []struct {
			name  string
			start *profile.Profile
			err   error
			dst   **profile.Profile
		}{{"mutex", startMutex, errM, &c.Mutex}, {"block", startBlock, errB, &c.Block}} {
			if p.err != nil {
				c.Warnings = AddWarning(c.Warnings, "no-"+p.name+"-profile", fmt.Sprintf("the target's /debug/pprof/%s could not be read (%v)", p.name, p.err))
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
