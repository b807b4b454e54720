// Package slowtest marks the tests that measure a target over windows of
// seconds (the experiment's interleaved loads, profiling's cost): -short
// skips them, so that a developer's quick run stays quick, unless
// PROBE_MEASURE=1 asks for them — CI's race step does, since the code they
// drive is concurrent. The full run (`go test ./...`) always runs them.
package slowtest

import (
	"os"
	"testing"
)

// Measures skips the test under -short unless PROBE_MEASURE is set.
func Measures(t testing.TB) {
	t.Helper()
	if testing.Short() && os.Getenv("PROBE_MEASURE") == "" {
		t.Skip("measures a target over seconds-long windows: skipped under -short (PROBE_MEASURE=1 runs it)")
	}
}
