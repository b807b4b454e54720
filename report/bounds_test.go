package report

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes"
)

// boundedRun is a run of 10 s on a machine of cores whose target used cpu
// over the window, and whose only finding takes share of the CPU.
func boundedRun(cores int, cpu time.Duration, others, share float64) *RunReport {
	run := &probes.Run{Microload: "sitemap", Target: "http://t", Duration: 10 * time.Second, MachineCPUs: cores, OthersCPU: others,
		Errors: map[string]int64{}, TargetProc: &probes.ProcStats{PID: 7, CPU: cpu}}
	return FromRun(run, Analysis{Findings: []analyzers.Finding{{Rule: "r", CPUShare: share, AllocShare: share / 2}}})
}

// A report whose figures can be is written; one that says a target used
// more cores than the machine has, or a share above 100%, is refused with
// the figures named, and nothing is written.
func TestWriteFolderRefusesImpossibleFigures(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFolder(dir, boundedRun(2, 19*time.Second, 0.05, 0.4)); err != nil {
		t.Fatalf("1.9 of 2 cores and a share of 40%%: %v", err)
	}
	for _, c := range []struct {
		name string
		rep  *RunReport
		want []string
	}{
		{"target over the machine", boundedRun(2, 34900*time.Millisecond, 0, 0.4), []string{"target_process.cpu_cores is 3.49 cores on a machine of 2"}},
		{"others over the machine", boundedRun(2, time.Second, 13.65, 0.4), []string{"machine.others_cpu_cores is 13.65 cores on a machine of 2"}},
		{"a share over 100%", boundedRun(2, time.Second, 0, 1.3), []string{"findings[0].cpu_share is 130.0%"}},
		{"a negative share", boundedRun(2, time.Second, 0, -0.2), []string{"findings[0].cpu_share is -20.0%", "findings[0].alloc_share is -10.0%"}},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		err := WriteFolder(dir, c.rep)
		if err == nil {
			t.Errorf("%s: written", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.HasPrefix(err.Error(), "probe bug") || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", c.name, err, w)
			}
		}
		if _, serr := os.Stat(filepath.Join(dir, "report.json")); serr == nil {
			t.Errorf("%s: report.json written anyway", c.name)
		}
	}
}

// Without machine.cores in the report, the bound is this machine's.
func TestBoundsWithoutMachineCores(t *testing.T) {
	n := runtime.NumCPU()
	over := boundedRun(0, time.Duration(n+1)*10*time.Second, 0, 0.1)
	if err := WriteFolder(t.TempDir(), over); err == nil || !strings.Contains(err.Error(), "on a machine of") {
		t.Errorf("%d cores on this machine of %d: %v", n+1, n, err)
	}
	if err := CheckBounds([]byte(`{"steps": [{"target": {"cpu_cores": 0.5, "cpu_share": 0.25}}]}`)); err != nil {
		t.Errorf("figures within bounds, nested: %v", err)
	}
	if err := CheckBounds([]byte(`{"steps": [{"target": {"cpu_share": 1.5}}]}`)); err == nil || !strings.Contains(err.Error(), "steps[0].target.cpu_share is 150.0%") {
		t.Errorf("a ramp step's share over 100%%: %v", err)
	}
}
