// Package shardtest is, for tests only, the shard folders probe run
// --shard writes, made and then edited as a hostile one would: the tests
// of shardreport and of probe merge craft theirs from the same ones.
package shardtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/pprof/profile"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
)

// Op is operation name of calls requests of us microseconds each.
func Op(name string, calls, us int64) *result.OpStats {
	newH := func() *hdrhistogram.Histogram {
		return hdrhistogram.New(report.OpSettings.Lowest, report.OpSettings.Highest, report.OpSettings.Digits)
	}
	op := &result.OpStats{Name: name, Latency: newH(), Service: newH(), Calls: calls}
	op.Latency.RecordValues(us, calls)
	op.Service.RecordValues(us, calls)
	return op
}

// Run is a closed run of one client for a second against 127.0.0.1:1, of
// ops.
func Run(ops ...*result.OpStats) *result.Run {
	return &result.Run{Microload: "http", Target: "http://127.0.0.1:1", Mode: "closed", Concurrency: 1, Clients: 1,
		Start: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Duration: time.Second, Errors: map[string]int64{},
		Ops: ops}
}

// Write writes run as shard index of count of run "r" into a new folder,
// its files (profiles) beside it, and returns the folder.
func Write(t testing.TB, run *result.Run, index, count int, files map[string][]byte) string {
	t.Helper()
	r := report.FromRun(run, report.Analysis{Files: files})
	s := report.Shard{Index: index, Count: count, RunID: "r", Config: map[string]string{"target": run.Target},
		Clients: run.Clients, Profiled: files != nil}
	if err := r.AttachShard(run, s); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), fmt.Sprint(index))
	if err := report.WriteFolder(dir, r); err != nil {
		t.Fatal(err)
	}
	return dir
}

// EditReport rewrites dir's report.json through edit, its numbers as
// written (json.Number), the configuration's hash made again as a crafter
// would.
func EditReport(t testing.TB, dir string, edit func(r map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "report.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var r map[string]any
	if err := d.Decode(&r); err != nil {
		t.Fatal(err)
	}
	edit(r)
	sh := r["shard"].(map[string]any)
	cfg := map[string]string{}
	for k, v := range sh["config"].(map[string]any) {
		cfg[k] = v.(string)
	}
	sh["config_hash"] = report.ConfigHash(cfg)
	if b, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Profile is a small valid CPU profile, gzipped.
func Profile(t testing.TB) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "main.handle"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Sample:   []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{10}}},
		Location: []*profile.Location{loc}, Function: []*profile.Function{fn},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
