package pipeline

import (
	"path/filepath"
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
	dir := t.TempDir()
	pl := plan(dir, 2)
	pl.Settle = 20 * time.Second
	_, written, err := interleaveSelfVersions(fl, pl)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"before-1", "after-1", "before-2", "after-2"} {
		rep, _ := written[filepath.Join(dir, "runs", "sitemap", name)].(*report.Run)
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
