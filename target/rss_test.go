package target

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/probehq/probe/lib/machine"
)

// RSS agrees with the kernel's own VmRSS line for a process, read while
// it is stopped: a running one (this test's own, beside the package's
// other tests) moves its resident set between the two reads.
func TestRSSIsTheResidentSet(t *testing.T) {
	child := startChild(t)
	pid := child.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	got, err := RSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skip(err)
	}
	var want int64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			want = kb << 10
		}
	}
	if want == 0 || got < want*9/10 || got > want*11/10 {
		t.Fatalf("RSS %d bytes, VmRSS %d", got, want)
	}
	if _, err := RSS(1 << 30); err == nil {
		t.Error("a process that does not exist has an RSS")
	}
}

// The machine's CPUs are all of them, not the ones this process may use:
// the others' share is measured over all of /proc/stat.
func TestNumCPUIsTheMachines(t *testing.T) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Skip(err)
	}
	want := 0
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "cpu") && f[0] != "cpu" {
			want++
		}
	}
	if got := machine.CPUs(); got != want || got < AvailableCPUs() {
		t.Fatalf("machine.CPUs %d, /proc/stat lists %d CPUs, this process may use %d", got, want, AvailableCPUs())
	}
}
