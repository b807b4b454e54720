package pipeline

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/probes/web"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/target"
)

// At each size, every microload after the first starts on a quiet target:
// a microload that leaves the server busy makes the next one wait, the
// wait is on the next one's figures, and a target still busy at the bound
// is a warning naming the microload and the size.
func TestScaleWaitsForAQuietTargetBeforeEachMicroload(t *testing.T) {
	f := &fakeTarget{now: time.Unix(0, 0), idle: 0.02, busy: 1.5}
	// Each measurement leaves the target busy: 2 s after a, 30 s after b
	// (past the 5 s bound).
	busyAfter := map[string]time.Duration{"a": 2 * time.Second, "b": 30 * time.Second}
	var measured []string
	o := ScaleOptions{Sizes: []ScaleSize{{Notes: 3}}, Microloads: []string{"a", "b", "c"}, Settle: 5 * time.Second,
		Synthetic: true, Log: io.Discard,
		settler:   func(*probes.Target, time.Duration) *Settler { return f.settler(5 * time.Second) },
		Microload: func(string) (probes.Microload, error) { return &web.Sitemap{}, nil },
		Start: func(ctx context.Context, dir string, notes int) (*target.Child, error) {
			return target.Start(ctx, target.ChildSpec{Argv: []string{os.Args[0]}, Env: []string{"PIPELINE_TEST_SERVE=1"}, Wait: 30 * time.Second})
		},
		Measure: func(ctx context.Context, label string, ml probes.Microload, t *probes.Target, lo probes.LoadOptions) (*report.Run,
			error) {
			name := strings.Fields(label)[0]
			measured = append(measured, name)
			f.busyUntil = f.now.Add(busyAfter[name])
			return &report.Run{}, nil
		}}
	doc := Scale(context.Background(), o)
	if len(doc.Points) != 1 || doc.Points[0].Error != "" || strings.Join(measured, " ") != "a b c" {
		t.Fatalf("points %+v, measured %v", doc.Points, measured)
	}
	ms := doc.Points[0].Microloads
	if ms["a"].Settle != nil {
		t.Errorf("a waited (%+v): the first microload of a size with no changes has nothing to wait for", ms["a"].Settle)
	}
	if b := ms["b"].Settle; b == nil || !b.Quiet || b.WaitedS < 2 || b.WaitedS > 3 {
		t.Errorf("b's wait %+v: want quiet after a's 2 s of leftover work", b)
	}
	if c := ms["c"].Settle; c == nil || c.Quiet || c.WaitedS < 5 {
		t.Errorf("c's wait %+v: want still busy at the 5 s bound", c)
	}
	var warned []string
	for _, w := range doc.Warnings {
		if w.Kind == "target-busy" {
			warned = append(warned, w.Message)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "c at 3 notes") {
		t.Errorf("target-busy warnings %q: want one, naming c at 3 notes", warned)
	}
}
