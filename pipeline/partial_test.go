package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// partialRun is a 10 s run whose target used 3.4 s of CPU (children of
// it) and whose profile of 10 s holds 0.1 s.
func partialRun(children time.Duration, windowErr error, unanswered bool, cpuWindow time.Duration) *result.Run {
	cpu := synthetic("cpu", "nanoseconds")
	cpu.DurationNanos = int64(10 * time.Second)
	return &result.Run{Microload: "sitemap", Duration: 10 * time.Second, CPUWindow: cpuWindow, Errors: map[string]int64{},
		TargetProc: &result.ProcStats{CPU: 3400 * time.Millisecond, Children: children},
		Profiles:   &result.Profiles{CPU: cpu, CPUWindowError: windowErr, Unanswered: unanswered}}
}

// profile-partial says what the profile covered against the run, and
// only the reasons the run shows: child processes only when the target
// had some, a failed or timed-out profile request, a tail past --duration.
func TestProfilePartialSaysWhy(t *testing.T) {
	timedOut := fmt.Errorf("CPU window 2: %w", context.DeadlineExceeded)
	for _, c := range []struct {
		name      string
		run       *result.Run
		want, not []string
	}{
		{"children", partialRun(3*time.Second, nil, false, 0),
			[]string{"covers 10s of the 10s the run's CPU figures cover, and 0.1s of the 3.4s of CPU", "3.0s of its CPU ran in " +
				"its child processes"}, []string{"no profile request failed"}},
		{"a timed-out window", partialRun(0, timedOut, false, 0),
			[]string{"a profile request timed out (CPU window 2: context deadline exceeded)", "--concurrency"}, []string{"child"}},
		{"a target that stopped answering", partialRun(0, fmt.Errorf("CPU window 2: connection refused"), true, 0),
			[]string{"the target stopped answering /debug/pprof (CPU window 2: connection refused)"}, []string{"child", "timed out"}},
		{"a run past --duration", partialRun(0, nil, false, 40*time.Second),
			[]string{"of the 40s the run's CPU figures cover", "its last requests ran 30s past --duration, unprofiled"}, []string{"child"}},
		{"no reason seen", partialRun(0, nil, false, 0),
			[]string{"no profile request failed and the target has no child processes"}, []string{"ran in its child"}},
	} {
		a := AnalyzeRun(c.run, nil)
		msg := ""
		for _, w := range a.Warnings {
			if w.Kind == "profile-partial" {
				msg = w.Message
			}
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q lacks %q", c.name, msg, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(msg, n) {
				t.Errorf("%s: %q says %q", c.name, msg, n)
			}
		}
	}
	// A profile that holds the target's CPU is not partial.
	full := partialRun(0, nil, false, 0)
	full.TargetProc.CPU = 150 * time.Millisecond
	for _, w := range AnalyzeRun(full, nil).Warnings {
		if w.Kind == "profile-partial" {
			t.Errorf("a full profile: %q", w.Message)
		}
	}
}

// Against a real server: a target whose work runs in child processes gets
// profile-partial naming them; one that burns its own CPU is profiled in
// full, and no warning claims children it does not have.
func TestProfilePartialSeesRealChildren(t *testing.T) {
	u := slowServer(t)
	profile := func() *target.ProfileOptions {
		return &target.ProfileOptions{PprofURL: u.JoinPath("/debug/pprof/"), Window: time.Second}
	}
	o := probes.LoadOptions{Concurrency: 2, Duration: 2 * time.Second, Timeout: 5 * time.Second, Profile: profile()}
	rep, run := measureRun(t, u, "/spawn?ms=200", o)
	if run.TargetProc == nil || run.TargetProc.Children <= 0 {
		t.Fatalf("the server's children were not seen: %+v", run.TargetProc)
	}
	msg := warning(rep, "profile-partial")
	t.Log(msg)
	if !strings.Contains(msg, "ran in its child processes") {
		t.Errorf("profile-partial %q; warnings %+v", msg, rep.Warnings)
	}
	o.Profile = profile()
	rep, run = measureRun(t, u, "/burn?ms=50", o)
	if run.TargetProc == nil || run.TargetProc.Children != 0 {
		t.Errorf("a server without children has children: %+v", run.TargetProc)
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w.Message, "child") {
			t.Errorf("a server without children: %+v", w)
		}
	}
}
