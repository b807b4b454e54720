package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/hdrlog"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/report/shardreport"
)

// Four shards of one run against a loopback server, each through the
// pipeline and written as its report folder, merged back: the merged
// histogram is the one histogram of every latency the shards recorded,
// request by request, and the counts are the shards' sums.
func TestMergedShardsEqualOneHistogramOfAllTheirLatencies(t *testing.T) {
	var mu sync.Mutex
	keysSeen := map[string]map[string]bool{} // key → the shards (X-Shard) that sent it
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		mu.Lock()
		if keysSeen[id] == nil {
			keysSeen[id] = map[string]bool{}
		}
		keysSeen[id][r.Header.Get("X-Shard")] = true
		mu.Unlock()
		if id == "3" {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		time.Sleep(time.Duration(len(id)) * 200 * time.Microsecond)
		fmt.Fprintf(w, "item %s", id)
	}))
	defer srv.Close()
	target := mustTarget(t, srv.URL)
	values := []string{"1", "2", "3", "4", "5", "6", "7", "80"}
	const shards, clients = 4, 10
	one := hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
	var requests, errs int64
	dirs := make([]string, shards)
	p := New(Options{})
	var wg sync.WaitGroup
	for i := range shards { // at once, as four machines would
		wg.Go(func() {
			sh := probes.Shard{Index: i, Count: shards}
			n, first := sh.Clients(clients)
			ml := sh.Split(&probes.HTTP{Path: "/item", Param: "id", Values: values,
				Header: []h1.Field{{Name: "X-Shard", Value: fmt.Sprint(i)}}}, first)
			rep, run, err := p.Measure(context.Background(), "http", ml, target,
				probes.LoadOptions{Concurrency: n, Duration: time.Second, Timeout: 5 * time.Second, RequestTimes: true})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for _, rt := range run.RequestTimes { // the raw values, as the client measured them
				one.RecordValue(max(1, rt.Latency.Microseconds()))
				requests++
				if rt.Failed {
					errs++
				}
			}
			mu.Unlock()
			cfg := map[string]string{"target": srv.URL, "duration": "1s", "concurrency": fmt.Sprint(clients)}
			if err := rep.AttachShard(run, report.Shard{Index: i, Count: shards, RunID: "r1", Config: cfg, Clients: n}); err != nil {
				t.Error(err)
				return
			}
			dirs[i] = filepath.Join(t.TempDir(), fmt.Sprint(i))
			if err := report.WriteFolder(dirs[i], rep); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if requests == 0 || errs == 0 {
		t.Fatalf("the shards sent %d requests, %d failed: the test needs both", requests, errs)
	}
	for key, by := range keysSeen {
		if len(by) != 1 {
			t.Errorf("key id=%s was sent by shards %v: each key belongs to one shard", key, by)
		}
	}
	var read []*shardreport.ShardRun
	for _, d := range dirs {
		s, err := shardreport.ReadShard(d)
		if err != nil {
			t.Fatal(err)
		}
		read = append(read, s)
	}
	merged, err := shardreport.MergeShards(read)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "merged")
	if err := report.WriteFolder(out, merged); err != nil {
		t.Fatal(err)
	}
	if merged.Latency.Requests != requests || merged.Latency.Errors != errs {
		t.Errorf("merged %d requests, %d errors; the shards recorded %d, %d", merged.Latency.Requests, merged.Latency.Errors, requests, errs)
	}
	f, err := os.Open(filepath.Join(out, report.ShardLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := hdrlog.Read(f, hdrlog.Of(one))
	if err != nil {
		t.Fatal(err)
	}
	all := hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
	for _, e := range entries {
		if strings.HasPrefix(e.Tag, "latency/") {
			all.Merge(e.Histogram)
		}
	}
	if !all.Equals(one) {
		t.Errorf("the merged histogram (%d values, p99 %d µs) is not the histogram of the shards' %d latencies (p99 %d µs)",
			all.TotalCount(), all.ValueAtQuantile(99), one.TotalCount(), one.ValueAtQuantile(99))
	}
	if want := float64(one.ValueAtQuantile(99)) / 1000; merged.Latency.P99 != want {
		t.Errorf("merged p99 %v ms, the one histogram's %v ms", merged.Latency.P99, want)
	}
	var perSecond int64
	for _, s := range merged.PerSecond {
		perSecond += s.Requests
	}
	if perSecond != requests {
		t.Errorf("the per-second series sums to %d requests, the shards sent %d", perSecond, requests)
	}
	if len(merged.Merge.Shards) != shards || merged.Connections.Clients != clients {
		t.Errorf("merge lists %d shards, %d clients", len(merged.Merge.Shards), merged.Connections.Clients)
	}
}

func mustTarget(t *testing.T, raw string) *probes.Target {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return &probes.Target{URL: u}
}
