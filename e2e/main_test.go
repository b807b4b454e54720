package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/probehq/probe/fixtures/site"
	"github.com/probehq/probe/internal/cli"
	"github.com/probehq/probe/internal/cli/clitest"

	"github.com/probehq/probe/internal/testbuild"
)

// The exit codes of cli.Run (internal/cli/main.go).
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func TestMain(m *testing.M) {
	site.RunQueryWorkerIfChild()
	if len(os.Args) > 2 && os.Args[1] == "static-server" {
		serveStatic(os.Args[2]) // a server that never sees a change: scale_test
		return
	}
	if len(os.Args) > 3 && os.Args[1] == "burn-server" {
		serveBurn(os.Args[2], os.Args[3]) // a server busy after its clients left: settle_test
		return
	}
	if len(os.Args) > 4 && os.Args[1] == "capacity-server" {
		serveCapacity(os.Args[2], os.Args[3], os.Args[4]) // a server of known capacity: ramp_test
		return
	}
	// probe re-runs its own binary with a command line ("fixture serve",
	// the Jsonnet child): here the test binary stands in for it. A test
	// binary's own arguments are all -test.* flags.
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		os.Exit(cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr))
	}
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: end-to-end tests skipped under -short (run go test ./e2e)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// probeCmd is probe's command line, called in the test's process.
var probeCmd = clitest.Probe(cli.Run)

// buildVictim builds the fuzz tests' victim server (as internal/cli's
// fuzz_test does).
func buildVictim(t *testing.T) string {
	t.Helper()
	return testbuild.Program(t, "../probes/fuzz/testdata/victim")
}
