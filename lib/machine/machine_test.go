package machine

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// Under `taskset -c 0` (bench/ scripts pin probe so), runtime.NumCPU is 1
// while the machine's busy time is still read over every CPU: the
// machine's cores must stay the machine's, or the others' CPU reads as
// more cores than there are and the report is refused as impossible.
func TestCPUsIgnoreTheAffinityMask(t *testing.T) {
	if os.Getenv("PROBE_TEST_MACHINE_CPUS") == "1" {
		fmt.Printf("numcpu=%d machine=%d\n", runtime.NumCPU(), CPUs())
		return
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil || runtime.NumCPU() < 2 {
		t.Skip("needs taskset and two CPUs")
	}
	self, _ := os.Executable()
	cmd := exec.Command(taskset, "-c", "0", self, "-test.run", "^TestCPUsIgnoreTheAffinityMask$")
	cmd.Env = append(os.Environ(), "PROBE_TEST_MACHINE_CPUS=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := fmt.Sprintf("numcpu=1 machine=%d", CPUs())
	if !strings.Contains(string(out), want) {
		t.Errorf("pinned to one CPU: %q, want %q", out, want)
	}
}
