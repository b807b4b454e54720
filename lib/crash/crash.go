// Package crash classifies how a Go process died from what it printed:
// stack overflow, out of memory, concurrent map writes, deadlock, panic,
// hang. It is a leaf: the load engine, the fuzzer and the reports all name
// crashes by it.
package crash

import (
	"regexp"
	"strings"

	"github.com/probehq/probe/lib/frames"
)

// Crash classes (DESIGN.md).
const (
	StackOverflow      = "stack-overflow"
	OutOfMemory        = "out-of-memory"
	ConcurrentMapWrite = "concurrent-map-write"
	Panic              = "panic"
	Hang               = "hang"
	Deadlock           = "deadlock"
	// Leak is no death: goroutines a request left blocked forever, which
	// the process lives with until its memory runs out (Go 1.27's
	// goroutineleak profile finds them).
	Leak = "leak"
)

// crashSignatures map the lines by which the Go runtime names a death to a
// class, most specific first: a stack overflow also prints "runtime:" lines,
// and every fatal error prints goroutine traces.
var crashSignatures = []struct {
	class string
	line  *regexp.Regexp
}{
	{StackOverflow, regexp.MustCompile(`^fatal error: stack overflow`)},
	{OutOfMemory, regexp.MustCompile(`^fatal error: (runtime: )?out of memory|^fatal error: runtime: cannot allocate memory`)},
	{ConcurrentMapWrite, regexp.MustCompile(`^fatal error: concurrent map (writes|read and map write|iteration and map write)`)},
	{Deadlock, regexp.MustCompile(`^fatal error: all goroutines are asleep - deadlock`)},
	{StackOverflow, regexp.MustCompile(`^runtime: goroutine stack exceeds`)},
	{OutOfMemory, regexp.MustCompile(`^runtime: out of memory`)},
	// No memory for a new thread's stack under a memory cap: a cgo build
	// aborts (SIGABRT, exit status 2), a pure Go one throws "newosproc".
	{OutOfMemory, regexp.MustCompile(`^runtime/cgo: pthread_create failed|^runtime: failed to create new OS thread`)},
	{Panic, regexp.MustCompile(`^panic: |^fatal error: |http: panic serving`)},
}

// Classification is why a Go process died (or, for a recovered panic, erred).
type Classification struct {
	Class    string
	Evidence string // the line that names it, or how the process ended
}

// ClassifyExit classifies a dead process from its exit status (as
// os/exec reports it, e.g. "exit status 2", "signal: killed") and the start
// of its stderr. ok is false when nothing says why it ended.
func ClassifyExit(status, stderr string) (c Classification, ok bool) {
	lines := strings.Split(stderr, "\n")
	for _, sig := range crashSignatures {
		for _, l := range lines {
			l = strings.TrimSpace(l)
			if i := strings.Index(l, "http: panic serving"); i > 0 {
				l = l[i:] // net/http prefixes its log lines with a time
			}
			if sig.line.MatchString(l) {
				return Classification{Class: sig.class, Evidence: l}, true
			}
		}
	}
	// Killed without a word from the Go runtime: the kernel's OOM killer or
	// a memory cap enforced from outside.
	if strings.Contains(status, "signal: killed") {
		return Classification{Class: OutOfMemory, Evidence: status + " without a Go error (the kernel's OOM killer or a memory cap)"}, true
	}
	return Classification{}, false
}

// ClassifyHang is the class of a live process that stopped answering.
func ClassifyHang(evidence string) Classification {
	return Classification{Class: Hang, Evidence: evidence}
}

// goroutineHeader starts a goroutine's trace in a Go crash dump.
// Fatal errors print "goroutine 7 gp=0x… m=4 mp=0x… [running]:".
var goroutineHeader = regexp.MustCompile(`^goroutine \d+ (.* )?\[.*\]:$`)

// Recursion names what a stack overflow recursed in: the package of the
// function that recurs most in the crashing goroutine's trace ("" when
// none recurs). Its top frames are only where the recursion happened to be
// when the stack ran out (strconv, a map lookup), and which helpers the
// recursion passes through, and how often, varies with the input; the
// package whose code makes up the cycle (an interpreter, a parser) does not.
func Recursion(stderr string) string {
	counts := map[string]int{}
	best, most := "", 0
	for _, fn := range CrashFrames(stderr, 1000) {
		counts[fn]++
		if n := counts[fn]; n > most || n == most && fn < best {
			best, most = fn, n
		}
	}
	if most < 3 {
		return ""
	}
	return frames.PkgPath(best)
}

// CrashFrames are the top functions of the first goroutine trace in a Go
// crash dump or a recovered panic's log, the runtime's (internal/ too) and
// net/http's recovery frames left out: what tells one crash from another.
func CrashFrames(stderr string, n int) []string {
	var frames []string
	in := false
	for _, l := range strings.Split(stderr, "\n") {
		if !in {
			in = goroutineHeader.MatchString(l)
			continue
		}
		if l == "" || goroutineHeader.MatchString(l) {
			if len(frames) > 0 {
				break
			}
			continue
		}
		if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "created by ") || strings.HasPrefix(l, "...") {
			continue
		}
		fn := l
		if i := strings.LastIndex(fn, "("); i > 0 {
			fn = fn[:i]
		}
		if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/") || fn == "panic" || strings.HasPrefix(fn,
			"net/http.(*conn).serve.func") {
			continue
		}
		frames = append(frames, fn)
		if len(frames) == n {
			break
		}
	}
	return frames
}

// FirstFatalLine finds the line by which a Go process names its death.
func FirstFatalLine(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for _, prefix := range []string{"fatal error:", "panic:", "runtime:", "SIGKILL", "signal:"} {
		for _, l := range lines {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
				return l
			}
		}
	}
	return ""
}
