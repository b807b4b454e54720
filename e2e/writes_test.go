package e2e

import (
	"context"
	"testing"

	"github.com/probehq/probe/report"
)

// Reads during writes on the fixture: per-request mode's full re-render
// stalls the readers, load-time mode's incremental sync does not; no write
// is lost in either.
func TestReadsDuringWrites(t *testing.T) {
	for _, mode := range []string{"per-request", "load-time"} {
		code, stdout, stderr := probeCmd.Run(t, context.Background(), "page", "--fixture-mode", mode, "--notes", "400",
			"--rate", "40", "--during-writes", "1/s", "--duration", "6s", "--warmup", "1s", "--concurrency", "16", "--json", "--out", t.TempDir())
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", mode, code, stderr)
		}
		var rep report.Run
		decodeStdout(t, mode, stdout, &rep)
		if rep.Writes == nil {
			t.Fatalf("%s: no writes in report.json: %.300s", mode, stdout)
		}
		w := rep.Writes
		if len(w.Changes) == 0 || w.Lost != 0 {
			t.Errorf("%s: %d changes, %d lost", mode, len(w.Changes), w.Lost)
		}
		for _, c := range w.Changes {
			if c.VisibleMS["page"] == 0 || c.VisibleMS["sitemap"] == 0 || c.VisibleMS["search"] == 0 {
				t.Errorf("%s: a change not seen everywhere: %v", mode, c.VisibleMS)
			}
		}
		if w.Stall != (mode == "per-request") {
			t.Errorf("%s: stall %v (%d reads during syncs)", mode, w.Stall, w.During.Requests)
		}
	}
}
