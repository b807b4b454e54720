package probes

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestJudgeWarnings(t *testing.T) {
	base := func() *Run {
		return &Run{Duration: 10 * time.Second, CPUs: 2, Clients: 4, ConnsOpened: 4}
	}
	r := base()
	r.GeneratorCPU = 18 * time.Second // 1.8 of 2 CPUs
	judge(r, LoadOptions{}, 2)
	if !hasWarning(r, "generator-bound") {
		t.Errorf("probe at 1.8 of 2 CPUs: %v", r.Warnings)
	}
	r = base()
	r.GeneratorCPU = 9 * time.Second
	r.TargetProc = &ProcStats{CPU: 8 * time.Second}
	r.OthersCPU = 0.2
	judge(r, LoadOptions{}, 2)
	if !hasWarning(r, "generator-bound") {
		t.Errorf("probe above the target on a saturated machine: %v", r.Warnings)
	}
	r = base()
	r.GeneratorCPU = time.Second
	r.TargetProc = &ProcStats{CPU: 10 * time.Second}
	judge(r, LoadOptions{}, 2)
	if len(r.Warnings) != 0 {
		t.Errorf("a target-bound run got warnings: %v", r.Warnings)
	}
	r = base()
	r.OthersCPU = 0.6
	judge(r, LoadOptions{}, 2)
	if !hasWarning(r, "machine-busy") {
		t.Errorf("others at 0.6 cores: %v", r.Warnings)
	}
}

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
	child, err := Start(context.Background(), ChildSpec{Argv: []string{os.Args[0], "-test.run=^$"}, Env: []string{"PROBE_TEST_DIE_AFTER=1000000"}, Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer child.Stop()
	ok, err := Pin(child.PID())
	if err != nil || !ok {
		t.Fatalf("pin: %v %v", ok, err)
	}
	target, self := cpusAllowed(t, child.PID()), cpusAllowed(t, os.Getpid())
	if target == "" || self == "" || target == self || strings.Contains(self, target) && len(self) == len(target) {
		t.Errorf("target on %q, probe on %q: want them apart", target, self)
	}
	u, _ := url.Parse(child.URL)
	if _, err := RunLoad(context.Background(), &HTTP{Path: "/"}, &Target{URL: u, Child: child}, LoadOptions{Concurrency: 2, Duration: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
}
