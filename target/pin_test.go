package target

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func cpusAllowed(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestPinSeparatesTargetAndGenerator(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil || before.Count() < 2 {
		t.Skip("needs two CPUs")
	}
	defer setAffinityAllThreads(os.Getpid(), &before)
	pid, _ := listenIn(t, "127.0.0.1:0", false)
	ok, err := Pin(pid)
	if err != nil || !ok {
		t.Fatalf("pin: %v %v", ok, err)
	}
	target, self := cpusAllowed(t, pid), cpusAllowed(t, os.Getpid())
	if target == "" || self == "" || target == self || strings.Contains(self, target) && len(self) == len(target) {
		t.Errorf("target on %q, probe on %q: want them apart", target, self)
	}
}
