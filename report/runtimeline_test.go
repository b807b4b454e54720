package report

import (
	"strings"
	"testing"

	"github.com/probehq/probe/result"
)

// A runtime read from the binary reads as before; one from the target's
// HTTP endpoints names its source and says "unknown" for each figure no
// source gave, with what would settle it.
func TestRuntimeLineSaysUnknown(t *testing.T) {
	binary := &result.Runtime{GoVersion: "go1.27.3", GOMAXPROCS: "default", CPUs: 2, GOGC: "default",
		GOMEMLIMIT: "default", From: "binary"}
	if got, want := RuntimeLine(binary), "go1.27.3, GOMAXPROCS default (2 CPUs in its affinity), GOGC default, GOMEMLIMIT default"; got != want {
		t.Errorf("binary:\n got %s\nwant %s", got, want)
	}
	expvar := &result.Runtime{GoVersion: "go1.26.2", GOEXPERIMENT: "greenteagc", From: "expvar",
		Unknown: "GOMAXPROCS, GOGC, GOMEMLIMIT and GODEBUG: probe cannot read the target's process (x); to know them, …"}
	if got, want := RuntimeLine(expvar), "go1.26.2 (GOEXPERIMENT greenteagc) (from expvar), GOMAXPROCS unknown, GOGC unknown, "+
		"GOMEMLIMIT unknown. Unknown: GOMAXPROCS, GOGC, GOMEMLIMIT and GODEBUG: probe cannot read the target's process (x); to know them, …"; got != want {
		t.Errorf("expvar:\n got %s\nwant %s", got, want)
	}
	none := &result.Runtime{Unknown: "the Go version, …: /debug/vars's \"bi\" is refused: GoVersion \"go1.27\\x1b[2J\\n# pwned\" …\x1b[2J\n# pwned"}
	got := RuntimeLine(none)
	if !strings.HasPrefix(got, "Go version unknown, GOMAXPROCS unknown, GOGC unknown, GOMEMLIMIT unknown. Unknown: the Go version") ||
		strings.ContainsAny(got, "\x1b\n") {
		t.Errorf("none: %q", got)
	}
	r := FromRun(sampleRun("page", 1000, 2000), Analysis{})
	r.TargetRuntime = none
	if md := r.Markdown(); !strings.Contains(md, "Its runtime: Go version unknown, ") || strings.Contains(md, "\n# pwned") {
		t.Errorf("report.md:\n%s", md)
	}
}
