package target

import (
	"os"
	"time"
)

// OthersWindow measures what processes other than probe and the target
// used of the machine over a span (an experiment's second).
type OthersWindow struct {
	pid    int
	opened time.Time
	start  cpuSnapshot
	target time.Duration
}

// OpenOthers opens a window on the machine beside probe and the target's
// process pid (0: not seen).
func OpenOthers(pid int) *OthersWindow {
	w := &OthersWindow{pid: pid, opened: time.Now(), start: snapshotCPU()}
	w.target = targetCPU(pid)
	return w
}

// Cores is how many cores other processes used on average since the
// window opened; false when the target's process is not seen, whose CPU
// cannot be told from the others'.
func (w *OthersWindow) Cores() (float64, bool) {
	if w.pid <= 0 {
		return 0, false
	}
	end := snapshotCPU()
	span := time.Since(w.opened)
	if span <= 0 || end.machineBusy == 0 {
		return 0, false
	}
	others := end.machineBusy - w.start.machineBusy - (end.self - w.start.self) - (targetCPU(w.pid) - w.target)
	return max(0, others.Seconds()/span.Seconds()), true
}

// targetCPU is the CPU of process pid and its children so far; 0 for
// probe's own process, already counted as probe's (a target served from
// inside probe, as in tests).
func targetCPU(pid int) time.Duration {
	if pid <= 0 || pid == os.Getpid() {
		return 0
	}
	cpu, _ := ProcessCPU(pid)
	return cpu + childrenCPU(pid)
}
