package probes

import (
	"testing"
	"time"

	"github.com/probehq/probe/result"
)

func TestJudgeWarnings(t *testing.T) {
	base := func() *result.Run {
		return &result.Run{Duration: 10 * time.Second, CPUs: 2, Clients: 4, ConnsOpened: 4}
	}
	r := base()
	r.GeneratorCPU = 18 * time.Second // 1.8 of 2 CPUs
	judge(r, LoadOptions{}, 2)
	if !hasWarning(r, "generator-bound") {
		t.Errorf("probe at 1.8 of 2 CPUs: %v", r.Warnings)
	}
	r = base()
	r.GeneratorCPU = 9 * time.Second
	r.TargetProc = &result.ProcStats{CPU: 8 * time.Second}
	r.OthersCPU = 0.2
	judge(r, LoadOptions{}, 2)
	if !hasWarning(r, "generator-bound") {
		t.Errorf("probe above the target on a saturated machine: %v", r.Warnings)
	}
	r = base()
	r.GeneratorCPU = time.Second
	r.TargetProc = &result.ProcStats{CPU: 10 * time.Second}
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
