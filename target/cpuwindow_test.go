package target

import (
	"testing"
	"time"
)

// A window over a target that spins and logs: its CPU is the target's,
// not probe's, and its stderr lines are counted; with the process unseen
// neither the target's CPU nor the others' is claimed.
func TestCPUWindowSeparatesTheTargetsCPU(t *testing.T) {
	child := startShell(t, "echo listening on http://127.0.0.1:9; while :; do echo spin >&2; done", 0)
	sampler := StartSampler(child.PID(), 100*time.Millisecond)
	defer sampler.Stop()
	w := OpenCPUWindow(sampler, child)
	time.Sleep(time.Second)
	spent := w.Close()
	lines, bytes := w.Log()
	// Even on a loaded machine a spinning process gets a tenth of a CPU,
	// and a sleeping probe uses far less than the target.
	if spent.Span < time.Second || spent.Target < 100*time.Millisecond || spent.Generator > spent.Target {
		t.Errorf("a spinning target: %+v", spent)
	}
	// A read of the pipe may end inside a line, at either end: 5 bytes a
	// line, give or take 4.
	if lines == 0 || bytes < 5*lines-4 || bytes > 5*lines+4 {
		t.Errorf("a logging target: %d lines, %d bytes", lines, bytes)
	}

	unseen := OpenCPUWindow(nil, nil)
	time.Sleep(100 * time.Millisecond)
	if got := unseen.Close(); got.Target != 0 || got.Children != 0 || got.Others != 0 || got.Span <= 0 {
		t.Errorf("an unseen target: %+v", got)
	}
	if lines, bytes := unseen.Log(); lines != 0 || bytes != 0 {
		t.Errorf("no child: %d lines, %d bytes", lines, bytes)
	}
}
