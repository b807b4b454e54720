package shardreport

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// shardRun is a run of microload as shard index of count would have
// measured it: n requests of random latencies (every tenth failed),
// recorded into one as well.
func shardRun(microload string, index, n int, rng *rand.Rand, one *hdrhistogram.Histogram) *result.Run {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(index) * 30 * time.Millisecond)
	op := &result.OpStats{Name: "GET /" + microload, Latency: newOpHistogram(), Service: newOpHistogram()}
	run := &result.Run{Microload: microload, Target: "http://127.0.0.1:1", Mode: "closed", Concurrency: 2, Clients: 2, Start: start,
		Duration: 2 * time.Second, Errors: map[string]int64{}, Ops: []*result.OpStats{op}}
	run.Seconds = []result.Second{{At: 0, Width: time.Second}, {At: time.Second, Width: time.Second}}
	for i := range n {
		us := 1 + rng.Int64N(400_000)
		op.Calls++
		op.Latency.RecordValue(us)
		op.Service.RecordValue(us)
		one.RecordValue(us)
		sec := &run.Seconds[i%2]
		sec.Requests++
		if i%10 == 0 {
			op.Errors++
			sec.Errors++
			run.Errors["status 500"]++
		}
		if sec.Latency == nil {
			sec.Latency = hdrhistogram.New(report.SecondSettings.Lowest, report.SecondSettings.Highest, report.SecondSettings.Digits)
		}
		sec.Latency.RecordValue(us)
	}
	return run
}

func writeShard(t *testing.T, dir string, run *result.Run, index, count int, runID string, cfg map[string]string) *report.Run {
	t.Helper()
	r := report.FromRun(run, report.Analysis{})
	if err := r.AttachShard(run, report.Shard{Index: index, Count: count, RunID: runID, Config: cfg, Clients: run.Clients}); err != nil {
		t.Fatal(err)
	}
	if dir != "" {
		if err := report.WriteFolder(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// probe all's shards merge microload by microload; one a shard skipped is
// merged from the others, a shard-missing warning naming the one.
func TestMergeSuitesByMicroload(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ones := map[string]*hdrhistogram.Histogram{"a": newOpHistogram(), "b": newOpHistogram()}
	cfg := map[string]string{"command": "all", "target": "http://127.0.0.1:1"}
	var dirs []string
	for i := range 3 {
		var runs []*report.Run
		for _, m := range []string{"a", "b"} {
			if m == "b" && i == 2 {
				continue // shard 2 skipped b
			}
			runs = append(runs, writeShard(t, "", shardRun(m, i, 500+100*i, rng, ones[m]), i, 3, "s1", cfg))
		}
		s := report.NewSuite("http://127.0.0.1:1", runs)
		if i == 2 {
			s.Skipped = []report.Skipped{{Microload: "b", Reason: "nothing found"}}
		}
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		if err := report.WriteFolder(dir, s); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	ms, err := MergeSuites(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms.runs) != 2 || len(ms.Skipped) != 0 {
		t.Fatalf("merged %d microloads, skipped %v", len(ms.runs), ms.Skipped)
	}
	for _, r := range ms.runs {
		if !r.LatencyHistogram().Equals(ones[r.Microload]) {
			t.Errorf("%s: the merged histogram is not the one of every shard's values", r.Microload)
		}
		if r.Latency.Requests != ones[r.Microload].TotalCount() {
			t.Errorf("%s: %d requests merged, %d recorded", r.Microload, r.Latency.Requests, ones[r.Microload].TotalCount())
		}
	}
	if b := ms.runs[1]; fmt.Sprint(b.Merge.Missing) != "[2]" || !hasWarning(b.Warnings, "shard-missing", "shard 2/3 is missing") {
		t.Errorf("b, skipped by shard 2: missing %v, warnings %v", b.Merge.Missing, b.Warnings)
	}
	out := filepath.Join(t.TempDir(), "m")
	if err := report.WriteFolder(out, ms); err != nil {
		t.Fatal(err)
	}
	js, _ := os.ReadFile(filepath.Join(out, "b", "report.json"))
	if !strings.Contains(string(js), `"missing": [`) {
		t.Errorf("b/report.json has no merge: %.300s", js)
	}
	if _, err := MergeSuites([]string{dirs[0], filepath.Join(dirs[1], "a")}); err == nil || !strings.Contains(err.Error(),
		"is not probe all's report") {
		t.Errorf("a suite and a run merged: %v", err)
	}
}

func hasWarning(ws []result.Warning, kind, text string) bool {
	for _, w := range ws {
		if w.Kind == kind && strings.Contains(w.Message, text) {
			return true
		}
	}
	return false
}

// The per-second series adds second I of every shard, and its histograms.
func TestMergeSumsThePerSecondSeries(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	one := newOpHistogram()
	var shards []*ShardRun
	var want [2]int64
	for i := range 2 {
		run := shardRun("x", i, 300, rng, one)
		for s := range 2 {
			want[s] += run.Seconds[s].Requests
		}
		shards = append(shards, shardRead(t, run, i, 2))
	}
	m, err := MergeShards(shards)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.PerSecond) != 2 || m.PerSecond[0].Requests != want[0] || m.PerSecond[1].Requests != want[1] || m.PerSecond[1].T != 1 {
		t.Errorf("per second %+v, want requests %v", m.PerSecond, want)
	}
	if m.Merge.Shards[1].ClockOffsetMS != 30 {
		t.Errorf("shard 1 opened 30 ms after shard 0; its clock offset is %v ms", m.Merge.Shards[1].ClockOffsetMS)
	}
}

// A report.json whose configuration was edited no longer matches its hash.
func TestReadShardRefusesAnEditedConfiguration(t *testing.T) {
	dir := t.TempDir()
	writeShard(t, dir, shardRun("x", 0, 10, rand.New(rand.NewPCG(5, 6)), newOpHistogram()), 0, 2, "r", map[string]string{"rate": "100"})
	path := filepath.Join(dir, "report.json")
	js, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(js), `"rate": "100"`, `"rate": "200"`, 1)), 0o644)
	if _, err := ReadShard(dir); err == nil || !strings.Contains(err.Error(), "does not match its hash") {
		t.Errorf("an edited configuration: %v", err)
	}
}

// What a shard knows of the target and its protocol reaches the merged
// report: the MCP lane (two shards of another lane are warned of), the
// target's runtime, the profiled shard's look for leaks.
func TestMergeKeepsTheLaneTheRuntimeAndTheLeakCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	one := newOpHistogram()
	merge := func(lanes ...string) *MergedRun {
		var shards []*ShardRun
		for i, lane := range lanes {
			run := shardRun("toolslist", i, 100, rng, one)
			run.MCP = &result.MCPLane{Lane: lane, ProtocolVersion: map[string]string{"stateless": "2026-07-28",
				"session": "2025-11-25"}[lane]}
			if i == 0 { // a shard that could not read the target: its runtime unknown
				run.TargetRuntime = &result.Runtime{Unknown: "the Go version, …: probe cannot read the target's process"}
			}
			if i == 1 {
				run.TargetRuntime = &result.Runtime{GoVersion: "go1.27.3", GOMAXPROCS: "default", GOGC: "default", GOMEMLIMIT: "default"}
			}
			shards = append(shards, shardRead(t, run, i, len(lanes)))
		}
		m, err := MergeShards(shards)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := merge("stateless", "stateless")
	if m.MCP == nil || m.MCP.Lane != "stateless" || m.MCP.ProtocolVersion != "2026-07-28" {
		t.Errorf("merged mcp %+v: want the shards' stateless lane", m.MCP)
	}
	if m.TargetRuntime == nil || m.TargetRuntime.GoVersion != "go1.27.3" {
		t.Errorf("merged target_runtime %+v: want the shard's that saw the target", m.TargetRuntime)
	}
	mixed := merge("stateless", "session")
	if !strings.Contains(fmt.Sprint(mixed.Warnings), "shards-mcp-lanes") {
		t.Errorf("shards of two lanes merged without a word: %+v", mixed.Warnings)
	}
}

// shardRead is run written as shard i of count of run "r" and read back.
func shardRead(t *testing.T, run *result.Run, i, count int) *ShardRun {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
	writeShard(t, dir, run, i, count, "r", map[string]string{"k": "v"})
	sr, err := ReadShard(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sr
}
