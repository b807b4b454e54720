// Command probe is a profiling-first hot-path analyzer for Go servers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"probe/fixtures/site"
)

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1   // the run failed: unreachable target, failed checks, a target that died
	exitUsage       = 2   // bad command line
	exitInterrupted = 130 // Ctrl-C; what was measured is written
)

// usageError is a bad command line: exit status 2, one line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

const usage = `usage: probe <command> [flags]

commands:
  toolslist | sitemap | search | notequery | feed | page
                   load one kind of request against the target (default: the fixture)
  all              every fixture microload in turn, one report
  http --path P    any endpoint of any server (--param name=v1,v2,… varies a query parameter)
  analyze PROFILE… the analyzers on pprof profiles taken elsewhere
  flame PROFILE -o FILE.html|FILE.svg [--base PROFILE]
                   a flame graph (differential with --base)
                   (add --profile to a microload to profile the target while it runs)
  fuzz notequery | fuzz http --cmd "SERVER COMMAND" --path "/x?d={int}"
                   find the inputs that crash, hang or panic a supervised server;
                   classify, shrink and save them with a reproduction
  ab --before CMD --after CMD [microloads] | ab --git DIR --before-ref A --after-ref B | ab --fixture
                   two versions, interleaved runs on this machine, statistics on what changed
  compare BEFORE_DIR AFTER_DIR
                   the before/after report of two report folders
  fixture serve    serve the reference target (a notes site) on loopback

Run 'probe <command> -h' for its flags.
`

func main() {
	site.RunQueryWorkerIfChild() // load-time mode guards Jsonnet in re-executed workers
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// PROBE_CPUPROFILE=FILE profiles probe itself: the generator's own cost
	// is a figure this tool must keep low.
	if f := os.Getenv("PROBE_CPUPROFILE"); f != "" {
		if out, err := os.Create(f); err == nil {
			pprof.StartCPUProfile(out)
			code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			out.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	var ue usageError
	var ie interruptedError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "probe: %v\n", err)
		return exitInterrupted
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "probe: %s\n", ue.msg)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "probe: %v\n", err)
		return exitError
	}
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	switch args[0] {
	case "fixture":
		return runFixture(ctx, args[1:], stdout, stderr)
	case "analyze":
		return runAnalyze(args[1:], stdout, stderr)
	case "flame":
		return runFlame(args[1:], stdout, stderr)
	case "fuzz":
		return runFuzz(ctx, args[1:], stdout, stderr)
	case "ab":
		return runAB(ctx, args[1:], stdout, stderr)
	case "compare":
		return runCompare(args[1:], stdout, stderr)
	case "all", "http", "toolslist", "sitemap", "search", "notequery", "feed", "page":
		return runLoad(ctx, args[0], args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q (see probe --help)", args[0])}
}
