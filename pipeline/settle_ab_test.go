package pipeline

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
)

// Each A/B run but the first waits for the version run before it, judged
// by its process's CPU; the wait is in the run's report.
func TestInterleaveWaitsForAQuietVersion(t *testing.T) {
	run := result.Run{Mode: "closed", Duration: time.Second, Errors: map[string]int64{},
		Ops: []*result.OpStats{op("GET /sitemap.xml", false, 50)}}
	fl := &fakeLoad{runs: []result.Run{run}}
	var mu sync.Mutex
	written := map[string]*report.Run{}
	p := New(Options{Load: fl.load, Write: func(dir string, doc report.Document) error {
		mu.Lock()
		written[dir], _ = doc.(*report.Run)
		mu.Unlock()
		return report.WriteFolder(dir, doc)
	}})
	dir := t.TempDir()
	a, b := selfVersion("before"), selfVersion("after")
	defer a.Stop()
	defer b.Stop()
	pl := plan(dir, 2)
	pl.Settle = 20 * time.Second
	if _, err := p.Interleave(context.Background(), a, b, pl); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"before-1", "after-1", "before-2", "after-2"} {
		rep := written[filepath.Join(dir, "runs", "sitemap", name)]
		if rep == nil {
			t.Fatalf("no report of %s", name)
		}
		switch st := rep.Settle; {
		case i == 0 && st != nil:
			t.Errorf("the first run waited: %+v", st)
		case i > 0 && (st == nil || st.JudgedBy != "cpu" || !st.Quiet):
			t.Errorf("%s: settle %+v: want a wait judged by the idle servers' CPU, quiet", name, st)
		}
	}
}
