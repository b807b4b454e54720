// Package machine is what probe reads of the machine it runs on, for the
// load engine and the report writer alike.
package machine

import (
	"os"
	"runtime"
	"strings"
)

// CPUs is the CPUs of the machine: the cpuN lines of /proc/stat,
// whose busy time the machine's figures are read from. runtime.NumCPU is
// this process's affinity mask, one CPU under `taskset -c 1`, against which
// the other processes' CPU of the whole machine reads as impossible.
func CPUs() int {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if len(line) > 3 && strings.HasPrefix(line, "cpu") && line[3] >= '0' && line[3] <= '9' {
			n++
		}
	}
	return max(n, runtime.NumCPU())
}

// BusyCores is how many cores other processes may use beside probe and
// the target before figures of CPU per request are called noisy: a
// second process on the other hyperthread of a core slows the same work
// by up to a third (CI saw +42% on one request's work), as much as an
// input that matters.
const BusyCores = 0.25
