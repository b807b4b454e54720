package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/result"
)

// boundedRun is a run of 10 s on a machine of cores whose target used cpu
// over the window, and whose only finding takes share of the CPU.
func boundedRun(cores int, cpu time.Duration, others, share float64) *Run {
	run := &result.Run{Microload: "sitemap", Target: "http://t", Duration: 10 * time.Second, MachineCPUs: cores, OthersCPU: others,
		Errors: map[string]int64{}, TargetProc: &result.ProcStats{PID: 7, CPU: cpu}}
	return FromRun(run, Analysis{Findings: []analyzers.Finding{{Rule: "r", CPUShare: share, AllocShare: share / 2}}})
}

// A report whose figures can be is written as it is; one that says a
// target used more cores than the machine has, or a share outside 0…100%,
// is written without those figures (null in report.json, a finding holding
// one left out) and with a figure-out-of-bounds warning naming each, in
// report.json, atop report.md and in the table: the rest of the report
// (the measured latencies) is never lost to a bug of probe's.
func TestWriteFolderDropsImpossibleFigures(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFolder(dir, boundedRun(2, 19*time.Second, 0.05, 0.4)); err != nil {
		t.Fatalf("1.9 of 2 cores and a share of 40%%: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report.json")); strings.Contains(string(b), OutOfBounds) {
		t.Errorf("figures within bounds got the warning:\n%s", b)
	}
	for _, c := range []struct {
		name     string
		rep      *Run
		want     []string
		findings int
	}{
		{"target over the machine", boundedRun(2, 34900*time.Millisecond, 0, 0.4), []string{"target_process.cpu_cores is 3.49 " +
			"cores on a machine of 2"}, 1},
		{"others over the machine", boundedRun(2, time.Second, 13.65, 0.4), []string{"machine.others_cpu_cores is 13.65 " +
			"cores on a machine of 2"}, 1},
		{"a share over 100%", boundedRun(2, time.Second, 0, 1.3), []string{"findings[0].cpu_share is 130.0%"}, 0},
		{"a negative share", boundedRun(2, time.Second, 0, -0.2),
			[]string{"findings[0].cpu_share is -20.0%", "findings[0].alloc_share is -10.0%"}, 0},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		if err := WriteFolder(dir, c.rep); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		js, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var doc struct {
			Findings []map[string]any `json:"findings"`
			Target   map[string]any   `json:"target_process"`
			Warnings []result.Warning `json:"warnings"`
		}
		if err := json.Unmarshal(js, &doc); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(doc.Findings) != c.findings {
			t.Errorf("%s: %d findings kept, want %d", c.name, len(doc.Findings), c.findings)
		}
		if v, ok := doc.Target["cpu_cores"]; strings.HasPrefix(c.want[0], "target_process") && (!ok || v != nil) {
			t.Errorf("%s: target_process.cpu_cores %v, want null", c.name, v)
		}
		if _, _, err := CheckBounds(js); err != nil {
			t.Errorf("%s: the written report.json: %v", c.name, err)
		}
		if again, dropped, _ := CheckBounds(js); dropped != nil || string(again) != string(js) {
			t.Errorf("%s: the written report.json is still out of bounds: %v", c.name, dropped)
		}
		var warned string
		for _, w := range doc.Warnings {
			if w.Kind == OutOfBounds {
				warned = w.Message
			}
		}
		md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
		var table strings.Builder
		bd, _ := Bounded(c.rep)
		bd.WriteTable(&table)
		for _, w := range c.want {
			if !strings.Contains(warned, w) {
				t.Errorf("%s: warning %q, want %q", c.name, warned, w)
			}
			if head, _, _ := strings.Cut(string(md), "\n## "); !strings.Contains(head, w) {
				t.Errorf("%s: report.md does not open with %q:\n%s", c.name, w, head)
			}
			if first, _, _ := strings.Cut(table.String(), "\n"); !strings.Contains(first, w) {
				t.Errorf("%s: the table's first line %q, want %q", c.name, first, w)
			}
		}
	}
}

// Without machine.cores in the report, the bound is this machine's; the
// check reaches figures nested in lists (a ramp's steps).
func TestBoundsWithoutMachineCores(t *testing.T) {
	n := runtime.NumCPU()
	over := boundedRun(0, time.Duration(n+1)*10*time.Second, 0, 0.1)
	js, err := over.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, dropped, err := CheckBounds(js); err != nil || len(dropped) != 1 || !strings.Contains(dropped[0], "on a machine of") {
		t.Errorf("%d cores on this machine of %d: %v %v", n+1, n, dropped, err)
	}
	in := []byte(`{"steps": [{"target": {"cpu_cores": 0.5, "cpu_share": 0.25}}]}`)
	if out, dropped, err := CheckBounds(in); err != nil || dropped != nil || string(out) != string(in) {
		t.Errorf("figures within bounds, nested: %v %v", dropped, err)
	}
	out, dropped, err := CheckBounds([]byte(`{"steps": [{"target": {"cpu_share": 1.5, "requests": 12345678901234567}}]}`))
	if err != nil || len(dropped) != 1 || !strings.Contains(dropped[0], "steps[0].target.cpu_share is 150.0%") {
		t.Errorf("a ramp step's share over 100%%: %v %v", dropped, err)
	}
	if !strings.Contains(string(out), `"cpu_share": null`) || !strings.Contains(string(out), "12345678901234567") {
		t.Errorf("the share is not null, or a count lost its digits:\n%s", out)
	}
	if _, _, err := CheckBounds([]byte(`{"a": `)); err == nil {
		t.Error("a report.json that does not parse passes")
	}
}
