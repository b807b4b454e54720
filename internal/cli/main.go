// Package cli is probe's command line: one table of commands
// (commands.go), each with a name, a one-line summary, its flag groups
// (flags.go) and a run function. `probe --help` and every
// `probe <command> -h` are generated from it. cmd/probe is a few lines
// over Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/lib/textline"
)

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1   // the run failed: unreachable target, failed checks, a target that died
	exitUsage       = 2   // bad command line
	exitInterrupted = 130 // Ctrl-C; what was measured is written
)

// Main runs the command line args (without the program's name) with
// Ctrl-C and SIGTERM ending the run, and returns the exit status.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// PROBE_CPUPROFILE=FILE profiles probe itself: the generator's own cost
	// is a figure this tool must keep low. PROBE_MEMPROFILE=FILE writes its
	// heap profile at the end (alloc_space: what the run allocated). Both
	// are unset here so that a fixture probe starts (this executable) does
	// not write over the same file.
	if f := os.Getenv("PROBE_CPUPROFILE"); f != "" {
		os.Unsetenv("PROBE_CPUPROFILE")
		if out, err := os.Create(f); err == nil && pprof.StartCPUProfile(out) == nil {
			defer out.Close()
			defer pprof.StopCPUProfile()
		}
	}
	if f := os.Getenv("PROBE_MEMPROFILE"); f != "" {
		os.Unsetenv("PROBE_MEMPROFILE")
		defer writeHeapProfile(f)
	}
	return run(ctx, args, os.Stdout, os.Stderr)
}

// writeHeapProfile writes probe's own heap profile to file, silently
// failing: it is a developer's switch, not part of a run's output.
func writeHeapProfile(file string) {
	out, err := os.Create(file)
	if err != nil {
		return
	}
	defer out.Close()
	pprof.Lookup("heap").WriteTo(out, 0)
}

// Run executes one command line (without the program's name), writing to
// stdout and stderr, and returns the exit status; ctx ending is Ctrl-C.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run(ctx, args, stdout, stderr)
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == shared.JsonnetCommand {
		return shared.RunJsonnetChild(args[1:], stdout, stderr)
	}
	err := dispatch(ctx, args, stdout, stderr)
	var ue shared.UsageError
	var ie shared.InterruptedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "probe: %s\n", textline.Of(err.Error(), shared.MaxErrorLine))
		return exitInterrupted
	case ctx.Err() != nil: // Ctrl-C before anything was measured (a build, a start)
		fmt.Fprintf(stderr, "probe: interrupted (%s)\n", textline.Of(err.Error(), shared.MaxErrorLine))
		return exitInterrupted
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "probe: %s\n", textline.Of(ue.Msg, shared.MaxErrorLine))
		return exitUsage
	default:
		printFailure(stderr, err)
		return exitError
	}
}

// printFailure writes a failed run's error, a "probe: " line each of its
// lines.
func printFailure(stderr io.Writer, err error) {
	lines := strings.Split(err.Error(), "\n")
	for i, line := range lines {
		if i == shared.MaxErrorLines {
			fmt.Fprintf(stderr, "probe: … and %d more lines\n", len(lines)-i)
			return
		}
		fmt.Fprintf(stderr, "probe: %s\n", textline.Of(line, shared.MaxErrorLine))
	}
}
