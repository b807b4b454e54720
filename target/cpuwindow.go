package target

import (
	"os"
	"time"
)

// CPUWindow reads what a measured window costs in CPU: probe's own, the
// machine's, and, when its process is seen, the target's and its
// children's; and what a target probe started wrote to stderr (a log
// storm is a finding).
type CPUWindow struct {
	sampler          *Sampler // the target's process; nil: not seen
	child            *Child
	opened           time.Time
	start            cpuSnapshot
	target, children time.Duration
	lines, bytes     int64
}

// WindowCPU is what a window cost, from its opening to its close.
type WindowCPU struct {
	Span             time.Duration
	Generator        time.Duration // probe's own
	Target, Children time.Duration // the target's process and its children; 0 when it is not seen
	// Others is the machine's busy time that is neither probe's nor the
	// target's; 0 when the target is not seen, whose CPU is not separable
	// from the others'.
	Others time.Duration
}

// OpenCPUWindow reads the counters as a window opens: sampler samples the
// target's process (nil: not seen), child is the process probe started
// (nil: none).
func OpenCPUWindow(sampler *Sampler, child *Child) *CPUWindow {
	w := &CPUWindow{sampler: sampler, child: child, start: snapshotCPU(), opened: time.Now()}
	if sampler != nil {
		w.target, w.children = sampler.cpuNow(), childrenCPU(sampler.pid)
	}
	if child != nil {
		w.lines, w.bytes = child.Stderr.Counts()
	}
	return w
}

// Close reads the CPU counters again: what the window cost.
func (w *CPUWindow) Close() WindowCPU {
	end := snapshotCPU()
	c := WindowCPU{Generator: end.self - w.start.self}
	if w.sampler != nil {
		c.Target, c.Children = w.sampler.cpuNow()-w.target, max(0, childrenCPU(w.sampler.pid)-w.children)
		c.Others = end.machineBusy - w.start.machineBusy - c.Generator - c.Target - c.Children
		if w.sampler.pid == os.Getpid() {
			// A target served from inside probe: its CPU is probe's.
			c.Others += c.Target + c.Children
		}
	}
	c.Span = time.Since(w.opened)
	return c
}

// Log is what the child wrote to stderr since the window opened, lines
// and bytes; 0 without a child.
func (w *CPUWindow) Log() (lines, bytes int64) {
	if w.child == nil {
		return 0, 0
	}
	l, b := w.child.Stderr.Counts()
	return l - w.lines, b - w.bytes
}
