package target

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/probehq/probe/internal/testservers/selfserve"
)

// A child that waits to be read: the runtime test's process. It says
// "ready" once running, because the kernel closes exec's close-on-exec
// pipe (where cmd.Start returns) before it lays out the new process's
// environment: read in that gap, /proc/PID/environ is empty.
func TestRuntimeChildWaits(t *testing.T) {
	if os.Getenv("PROBE_RUNTIME_CHILD") == "" {
		t.Skip("the runtime test's child")
	}
	fmt.Println("ready")
	time.Sleep(20 * time.Second)
}

// startChild starts this test binary as TestRuntimeChildWaits with env
// added, and returns once the child says it runs.
func startChild(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd, out, _ := selfserve.Rerun(t, "^TestRuntimeChildWaits$", append([]string{"PROBE_RUNTIME_CHILD=1"}, env...)...)
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the child ended before it ran")
		}
	case <-time.After(time.Minute):
		t.Fatal("the child did not start in a minute")
	}
	return cmd
}

// RuntimeOf reads a Go process's build and its environment's settings:
// this test's own binary, started again with settings of its own.
func TestRuntimeOfAGoProcess(t *testing.T) {
	cmd := startChild(t, "GOGC=50", "GOMAXPROCS=1", "GOMEMLIMIT=512MiB", "GODEBUG=gctrace=0")
	rt, err := RuntimeOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if rt.GoVersion != runtime.Version() || rt.From != "binary" || rt.CPUs < 1 {
		t.Errorf("go %q (want %q), from %q, %d CPUs", rt.GoVersion, runtime.Version(), rt.From, rt.CPUs)
	}
	if rt.GOGC != "50" || rt.GOMAXPROCS != "1" || rt.GOMEMLIMIT != "512MiB" || rt.GODEBUG != "gctrace=0" {
		t.Errorf("settings %+v", rt)
	}
	mine, err := RuntimeOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if mine.GOGC != "default" && os.Getenv("GOGC") == "" {
		t.Errorf("GOGC unset read as %q", mine.GOGC)
	}
}

// Not a Go program, or no process: an error, never a guess.
func TestRuntimeOfWhatIsNoGoProcess(t *testing.T) {
	sh, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	cmd := exec.Command(sh, "20")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if rt, err := RuntimeOf(cmd.Process.Pid); err == nil {
		t.Errorf("sleep read as a Go program: %+v", rt)
	}
	if rt, err := RuntimeOf(1 << 30); err == nil {
		t.Errorf("no process read as %+v", rt)
	}
}

func TestCPUListCount(t *testing.T) {
	for list, want := range map[string]int{"0": 1, "0-3": 4, "0-3,8,10-11": 7, "": 0} {
		if got := cpuListCount(list); got != want {
			t.Errorf("%q: %d, want %d", list, got, want)
		}
	}
}
