package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// shardReport is what the tests read of a shard's or a merge's report.json.
type shardReport struct {
	Latency struct {
		Requests int64   `json:"requests"`
		Errors   int64   `json:"errors"`
		P99      float64 `json:"p99_ms"`
	} `json:"latency"`
	Shard *struct {
		Index      int    `json:"index"`
		RunID      string `json:"run_id"`
		ConfigHash string `json:"config_hash"`
		Clients    int    `json:"clients"`
		Profiled   bool   `json:"profiled"`
	} `json:"shard"`
	Merge *struct {
		Missing []int `json:"missing"`
		Shards  []struct {
			Index         int      `json:"index"`
			ClockOffsetMS *float64 `json:"clock_offset_ms"`
		} `json:"shards"`
	} `json:"merge"`
	Thresholds []struct {
		Expr   string `json:"expr"`
		Broken bool   `json:"broken"`
	} `json:"thresholds"`
	Warnings []struct{ Kind, Message string } `json:"warnings"`
}

func readShardReport(t *testing.T, dir string) shardReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r shardReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Four shards of probe http against a loopback server, run at once as
// four machines would, then probe merge: the counts are the shards' sums,
// --fail-on judges the merged p99, and folders that are not one run's
// shards are refused in one line.
func TestShardsThenMerge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("id") == "3" {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "item %s", r.URL.Query().Get("id"))
	}))
	defer srv.Close()
	root := t.TempDir()
	base := []string{"http", "--target", srv.URL, "--path", "/x", "--param", "id=1,2,3,4,5,6,7,8", "--duration", "1s",
		"--warmup", "0", "--concurrency", "8"}
	type shardRun struct {
		name  string
		extra []string
	}
	runs := []shardRun{
		{"0", []string{"--shard", "0/4", "--run-id", "t1"}},
		{"1", []string{"--shard", "1/4", "--run-id", "t1", "--profile"}},
		{"2", []string{"--shard", "2/4", "--run-id", "t1"}},
		{"other-run", []string{"--shard", "2/4", "--run-id", "t2"}},
		{"other-rate", []string{"--shard", "3/4", "--run-id", "t1", "--rate", "200"}},
		{"other-header", []string{"--shard", "3/4", "--run-id", "t1", "--header", "X-Variant: b"}},
		{"plain", nil}, // no --shard: a run of its own
	}
	stderrs := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			_, _, stderr := probeCmd.Run(t, context.Background(), append(append(base, r.extra...), "--out", filepath.Join(root, r.name))...)
			mu.Lock()
			stderrs[r.name] = stderr
			mu.Unlock()
		})
	}
	// The fourth shard takes its index from the environment, as in an
	// Indexed Job (set for this process: it runs alone, after the others).
	wg.Wait()
	t.Setenv("JOB_COMPLETION_INDEX", "3")
	_, _, stderrs["3"] = probeCmd.Run(t, context.Background(),
		append(append(base, "--shards", "4", "--run-id", "t1"), "--out", filepath.Join(root, "3"))...)
	var requests, errs int64
	var dirs []string
	for i := range 4 {
		dir := filepath.Join(root, fmt.Sprint(i))
		r := readShardReport(t, dir)
		if r.Shard == nil || r.Shard.Index != i || r.Shard.RunID != "t1" || r.Shard.Clients != 2 {
			t.Fatalf("shard %d's report.json: shard %+v (stderr %s)", i, r.Shard, stderrs[fmt.Sprint(i)])
		}
		if r.Shard.Profiled {
			t.Errorf("shard %d says it profiled the target", i)
		}
		requests += r.Latency.Requests
		errs += r.Latency.Errors
		dirs = append(dirs, dir)
	}
	if !strings.Contains(stderrs["1"], "shard 1/4: --profile is ignored: only shard 0 profiles the target") {
		t.Errorf("shard 1 with --profile: stderr %q", stderrs["1"])
	}
	if requests == 0 || errs == 0 {
		t.Fatalf("the shards sent %d requests, %d failed: the test needs both", requests, errs)
	}

	out := filepath.Join(root, "merged")
	code, _, stderr := probeCmd.Run(t, context.Background(), append([]string{"merge", "--out", out}, dirs...)...)
	if code != exitError || !strings.Contains(stderr, "requests failed their checks") {
		t.Errorf("merge of shards with failed requests: exit %d, stderr %q", code, stderr)
	}
	m := readShardReport(t, out)
	if m.Latency.Requests != requests || m.Latency.Errors != errs {
		t.Errorf("merged %d requests, %d errors; the shards' sum is %d, %d", m.Latency.Requests, m.Latency.Errors, requests, errs)
	}
	if m.Merge == nil || len(m.Merge.Shards) != 4 || m.Merge.Shards[0].ClockOffsetMS == nil || len(m.Merge.Missing) != 0 {
		t.Fatalf("merged report.json's merge: %+v", m.Merge)
	}
	for _, f := range []string{"report.md", "report.html", "latency.hlog", "per-second.hlog"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Errorf("the merged folder has no %s", f)
		}
		if strings.HasPrefix(f, "report.") && !strings.Contains(string(b), "clock offset") {
			t.Errorf("the merged %s does not list the shards' clock offsets", f)
		}
	}

	// --fail-on reads the merged p99: just under it breaks, at it holds.
	for _, tc := range []struct {
		limit  float64
		broken bool
	}{{m.Latency.P99 - 0.001, true}, {m.Latency.P99, false}} {
		expr := fmt.Sprintf("p99_ms>%g", tc.limit)
		dir := filepath.Join(t.TempDir(), "gate")
		_, _, stderr := probeCmd.Run(t, context.Background(), append([]string{"merge", "--out", dir, "--fail-on", expr}, dirs...)...)
		g := readShardReport(t, dir)
		if len(g.Thresholds) != 1 || g.Thresholds[0].Broken != tc.broken || strings.Contains(stderr, expr) != tc.broken {
			t.Errorf("--fail-on %s on a merged p99 of %v ms: %+v, stderr %q", expr, m.Latency.P99, g.Thresholds, stderr)
		}
	}

	// A missing shard is merged, with a warning naming it.
	missing := filepath.Join(t.TempDir(), "three")
	_, _, stderr = probeCmd.Run(t, context.Background(), "merge", "--out", missing, dirs[0], dirs[1], dirs[2])
	if !strings.Contains(stderr, "probe: warning: shard 3/4 is missing") {
		t.Errorf("three of four shards: stderr %q", stderr)
	}
	if r := readShardReport(t, missing); r.Merge == nil || fmt.Sprint(r.Merge.Missing) != "[3]" || r.Latency.Requests >= requests {
		t.Errorf("three of four shards: merge %+v, %d requests", r.Merge, r.Latency.Requests)
	}

	corrupt := filepath.Join(t.TempDir(), "corrupt")
	if err := os.CopyFS(corrupt, os.DirFS(dirs[1])); err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(filepath.Join(corrupt, "latency.hlog"))
	os.WriteFile(filepath.Join(corrupt, "latency.hlog"), log[:len(log)-40], 0o644)
	twice := filepath.Join(t.TempDir(), "twice")
	os.CopyFS(twice, os.DirFS(dirs[0]))
	notShard := t.TempDir()
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{dirs[0], dirs[1], filepath.Join(root, "other-run")}, `shards of two runs: ` + dirs[0] + ` is of run "t1"`},
		{[]string{dirs[0], filepath.Join(root, "other-rate")}, `were run with different settings (rate "0" vs "200")`},
		{[]string{dirs[0], filepath.Join(root, "other-header")}, `were run with different settings (header "" vs "sha256:`},
		{[]string{dirs[0], corrupt}, "latency.hlog is corrupt"},
		{[]string{dirs[0], twice}, "are both shard 0/4"},
		{[]string{dirs[0], notShard}, "no report.json: not a report folder"},
		{[]string{dirs[0], filepath.Join(root, "plain")}, "plain: not a shard's report (run with --shard I/N)"},
		{nil, "usage: probe merge SHARD_DIR"},
	} {
		probeCmd.BadInput(t, append([]string{"merge"}, tc.dirs...), exitUsage, tc.want)
	}
}

func TestShardBadCommandLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	http := []string{"http", "--path", "/x", "--target", srv.URL}
	t.Setenv("JOB_COMPLETION_INDEX", "")
	os.Unsetenv("JOB_COMPLETION_INDEX")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(http, "--shard", "4/4"), "shard 4/4: the index must be 0 to 3"},
		{append(http, "--shard", "one"), `--shard "one": want I/N`},
		{append(http, "--shard", "0/4", "--shards", "4"), "not both"},
		{append(http, "--shards", "4"), "JOB_COMPLETION_INDEX"},
		{append(http, "--shard", "0/4", "--concurrency", "auto"), "--concurrency auto chooses one machine's clients"},
		{append(http, "--shard", "0/40"), "--concurrency 32 is fewer clients than 40 shards"},
		{[]string{"http", "--path", "/x", "--shard", "0/2"}, "--shard: give --target"},
		{append(http, "--shard", "0/2", "--during-writes", "1"), "--during-writes"},
	} {
		probeCmd.BadInput(t, tc.args, exitUsage, tc.want)
	}
}
