package target

import (
	"bytes"
	"cmp"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/probehq/probe/result"
)

// maxEnviron bounds what is read of a process's environment.
const maxEnviron = 1 << 20

// RuntimeOf reads the Go runtime of the process pid: its executable's
// build information (Go version, experiments, main module) and its
// environment's GOMAXPROCS, GOGC, GOMEMLIMIT and GODEBUG. An error when
// the executable is not a Go program probe can read (another user's, a
// stripped or non-Go binary).
func RuntimeOf(pid int) (*result.Runtime, error) {
	proc := fmt.Sprintf("/proc/%d", pid)
	info, err := buildinfo.ReadFile(proc + "/exe")
	if err != nil {
		return nil, fmt.Errorf("the build information of process %d: %v", pid, err)
	}
	rt := &result.Runtime{GoVersion: info.GoVersion, Module: info.Main.Path, From: "binary",
		GOMAXPROCS: "default", GOGC: "default", GOMEMLIMIT: "default"}
	for _, s := range info.Settings {
		if s.Key == "GOEXPERIMENT" {
			rt.GOEXPERIMENT = s.Value
		}
	}
	env := environOf(proc + "/environ")
	rt.GOMAXPROCS = cmp.Or(env["GOMAXPROCS"], rt.GOMAXPROCS)
	rt.GOGC = cmp.Or(env["GOGC"], rt.GOGC)
	rt.GOMEMLIMIT = cmp.Or(env["GOMEMLIMIT"], rt.GOMEMLIMIT)
	rt.GODEBUG = env["GODEBUG"]
	rt.CPUs = allowedCPUs(proc + "/status")
	return rt, nil
}

// environOf is the process's environment (empty when unreadable: another
// user's process keeps it to itself).
func environOf(path string) map[string]string {
	env := map[string]string{}
	b, err := readBounded(path, maxEnviron)
	if err != nil {
		return env
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return env
}

// allowedCPUs counts the CPUs of the status file's Cpus_allowed_list
// (0 when it cannot be read).
func allowedCPUs(path string) int {
	b, err := readBounded(path, 64<<10)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return cpuListCount(strings.TrimSpace(list))
		}
	}
	return 0
}

// cpuListCount counts a CPU list such as 0-3,8,10-11.
func cpuListCount(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		var lo, hi int
		if c, _ := fmt.Sscanf(part, "%d-%d", &lo, &hi); c == 2 && hi >= lo {
			n += hi - lo + 1
		} else if c, _ := fmt.Sscanf(part, "%d", &lo); c == 1 {
			n++
		}
	}
	return n
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(io.LimitReader(f, limit))
	return b.Bytes(), err
}
