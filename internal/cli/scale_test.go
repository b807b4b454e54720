package cli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
)

func TestScaleBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scale", "--notes", "500,400"}, "the sizes must increase"},
		{[]string{"scale", "--notes", "500"}, "two sizes at least"},
		{[]string{"scale", "--notes", "a,b"}, "want sizes like"},
		{[]string{"scale", "--cmd", "server --port {port}", "--vault-gen"}, "with {vault}"},
		{[]string{"scale", "--cmd", "server {vault}"}, "--vault-gen"},
		{[]string{"scale", "nosuch"}, `unknown microload "nosuch"`},
		{[]string{"scale", "--fixture-mode", "lazy"}, `--fixture-mode "lazy": want per-request or load-time`},
		{[]string{"scale", "--cmd", "server '{vault}", "--vault-gen"}, "not a command"},
	} {
		probeCmd.BadInput(t, tc.args, exitUsage, tc.want)
	}
}

// Ctrl-C before the first size: exit 130 with one line, and no claim that
// anything was measured.
func TestScaleInterruptedBeforeTheFirstSize(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, stdout, stderr := probeCmd.Run(t, ctx, "scale", "page", "--notes", "10,20", "--out", filepath.Join(t.TempDir(), "r"))
	if code != exitInterrupted || stdout != "" {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
	clitest.OneLine(t, stderr, "interrupted before anything was measured")
}

// A server that never shows a change: each change times out with a clear
