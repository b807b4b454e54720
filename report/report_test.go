package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/result"
)

func sampleRun(name string, latenciesUS ...int64) *result.Run {
	op := &result.OpStats{Name: "GET /x", Latency: newHistogramForTest(), Service: newHistogramForTest()}
	for _, v := range latenciesUS {
		op.Latency.RecordValue(v)
		op.Service.RecordValue(v)
		op.Calls++
	}
	op.Errors = 1
	setup := &result.OpStats{Name: "initialize", Setup: true, Calls: 4, Latency: newHistogramForTest(), Service: newHistogramForTest()}
	setup.Latency.RecordValue(9000)
	return &result.Run{Microload: name, Target: "http://127.0.0.1:1", AcceptEncoding: "gzip", Mode: "closed", Concurrency: 4,
		Duration: 2 * time.Second,
		Ops:      []*result.OpStats{setup, op}, Errors: map[string]int64{"GET /x: status 500": 1}, Clients: 4, ConnsOpened: 4,
		Digests: []result.Digest{{Key: "/x", Requests: int64(len(latenciesUS)), Distinct: 1}}, GeneratorCPU: 100 * time.Millisecond,
		Warnings: []result.Warning{{Kind: "machine-busy", Message: "busy"}}}
}

func TestFromRun(t *testing.T) {
	lat := make([]int64, 0, 100)
	for i := int64(1); i <= 100; i++ {
		lat = append(lat, i*1000) // 1..100 ms
	}
	r := FromRun(sampleRun("sitemap", lat...), Analysis{})
	l := r.Latency
	// 99 of the 100 passed their checks in 2 s: rps counts those.
	if l.Requests != 100 || l.Errors != 1 || l.RPS != 49.5 {
		t.Errorf("latency %+v: set-up calls and failed ones must not count", l)
	}
	if l.P50 < 49.9 || l.P50 > 50.1 || l.P99 < 98.9 || l.P99 > 99.1 || l.Max < 99.9 || l.Max > 100.1 {
		t.Errorf("percentiles %+v", l)
	}
	if r.Generator.CPUPerRequestUS != 1000 {
		t.Errorf("cpu per request %v µs", r.Generator.CPUPerRequestUS)
	}
	var back map[string]any
	js, _ := r.JSON()
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"microload", "target", "mode", "duration_s", "latency", "findings", "crashes", "warnings"} {
		if _, ok := back[k]; !ok {
			t.Errorf("report.json lacks DESIGN.md's %q", k)
		}
	}
	if back["findings"] == nil || back["crashes"] == nil {
		t.Error("findings and crashes must be empty arrays, not null")
	}
	md := r.Markdown()
	for _, want := range []string{"| initialize | 4 | set-up |", "| GET /x | 100 | 50 |", "status 500", "machine-busy"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	var table strings.Builder
	r.WriteTable(&table)
	if !strings.Contains(table.String(), "initialize") || !strings.Contains(table.String(), "error ×1: GET /x: status 500") {
		t.Errorf("table:\n%s", table.String())
	}
}

func TestCombineAndWriteFolder(t *testing.T) {
	a := FromRun(sampleRun("sitemap", 1000, 2000), Analysis{})
	b := FromRun(sampleRun("page", 3000, 4000, 5000), Analysis{})
	all := NewSuite("http://127.0.0.1:1", []*Run{a, b})
	if all.Latency.Requests != 5 || all.Latency.Errors != 2 || len(all.Runs) != 2 || all.Errors["page: GET /x: status 500"] != 1 {
		t.Errorf("combined %+v", all.Latency)
	}
	if !all.Failed() {
		t.Error("a run with errors must fail")
	}
	dir := t.TempDir()
	if err := WriteFolder(dir, all); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.json", "report.md", "latency.hgrm", "sitemap/report.json", "page/latency-get-x.hgrm"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	hgrm, _ := os.ReadFile(filepath.Join(dir, "page", "latency.hgrm"))
	if !strings.HasPrefix(string(hgrm), " Value\tPercentile\tTotalCount\t1/(1-Percentile)") || !strings.Contains(string(hgrm),
		"#[Max     =        5.00") {
		t.Errorf("latency.hgrm is not HdrHistogram's format in ms:\n%s", hgrm)
	}
}

// A finding no profile sample placed says why, with its evidence, instead
// of an empty "at".
func TestWhereWithoutAStack(t *testing.T) {
	f := analyzers.Finding{Rule: "log-storm", Evidence: "the target wrote 4770 lines to stderr during the run"}
	if got := Where(f); got != "no stack: the target wrote 4770 lines to stderr during the run" {
		t.Errorf("where = %q", got)
	}
	f.Frames = []string{"log.Printf", "app.handler"}
	if got := Where(f); got != "at log.Printf ← app.handler" {
		t.Errorf("where = %q", got)
	}
}
