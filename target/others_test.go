package target

import (
	"math"
	"os"
	"os/exec"
	"testing"
	"time"
)

// A process that burns a core is "other" to a window on another target,
// and no other to a window on itself: the two windows, read together,
// differ by its CPU.
func TestOthersLeaveTheTargetOut(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip(err)
	}
	burner := exec.Command("sh", "-c", "while :; do :; done")
	sleeper := exec.Command("sleep", "30")
	for _, c := range []*exec.Cmd{burner, sleeper} {
		if err := c.Start(); err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	beside := OpenOthers(sleeper.Process.Pid)
	onBurner := OpenOthers(burner.Process.Pid)
	before, _ := ProcessCPU(burner.Process.Pid)
	opened := time.Now()
	time.Sleep(time.Second)
	after, _ := ProcessCPU(burner.Process.Pid)
	burned := (after - before).Seconds() / time.Since(opened).Seconds()
	a, okA := beside.Cores()
	b, okB := onBurner.Cores()
	if !okA || !okB {
		t.Fatal("the windows read nothing")
	}
	if burned < 0.2 {
		t.Skipf("the burner got %.2f of a core: too little to tell", burned)
	}
	// Each read is /proc's ticks of 10 ms over a second, twice.
	if math.Abs((a-b)-burned) > 0.1 || a < burned-0.1 {
		t.Errorf("others beside the burner %.2f cores, with it as the target %.2f; it burned %.2f", a, b, burned)
	}
	if _, ok := OpenOthers(0).Cores(); ok {
		t.Error("a window on no target read the others")
	}
	// probe's own process as the target (a test's server) is counted
	// once: beside the burner, the others are the burner's and more.
	if c, ok := OpenOthers(os.Getpid()).Cores(); !ok || c < 0 {
		t.Errorf("a window on probe's own process: %.2f, %v", c, ok)
	}
}
