package probes

import (
	"context"
	"time"
)

// CaptureProfiles profiles the target for d as a run's measured window
// does, for a load that is not the engine's (probe agents' MCP sessions).
func CaptureProfiles(ctx context.Context, o ProfileOptions, d time.Duration) *Profiles {
	return captureProfiles(ctx, o, d)
}
