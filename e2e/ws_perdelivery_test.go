package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/fanout"
	"github.com/probehq/probe/report/wsreport"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"

	"github.com/probehq/probe/internal/testbuild"
)

// wsPushRun starts wspush in mode and runs probe ws on it, profiled: the
// exit code, stderr, report.json and report.md.
func wsPushRun(t *testing.T, bin, mode string, args ...string) (int, string, *wsreport.WS, string) {
	t.Helper()
	srv := startChild(t, target.ChildSpec{Argv: []string{bin, "-mode", mode}, Wait: 30 * time.Second})
	defer srv.Stop() // before the test's next server starts
	out := t.TempDir()
	all := append([]string{"ws", "--json", "--out", out, "--target", srv.URL, "--auth", "none", "--connections", "12", "--rooms", "3",
		"--events", "3", "--rounds", "1", "--pause", "1s", "--read-limit", "1MiB", "--publish-path", "/publish", "--profile"}, args...)
	code, _, stderr := probeCmd.Run(t, context.Background(), all...)
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("no report; exit %d: %s", code, stderr)
	}
	var d wsreport.WS
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	return code, stderr, &d, string(md)
}

// TestWSPerSubscriberEncode: a push server that encodes each event again
// for every subscriber (inside wsjson.Write) gets a per-delivery-work
// finding with its share, stack and fix, in report.json and report.md;
// one that encodes once per event gets none.
func TestWSPerSubscriberEncode(t *testing.T) {
	bin := testbuild.Program(t, "./testdata/wspush")
	code, stderr, d, md := wsPushRun(t, bin, "per-subscriber")
	if code != exitOK || d.Failed() {
		t.Fatalf("exit %d, verdict %q\n%s", code, d.Verdict, stderr)
	}
	i := slices.IndexFunc(d.Findings, func(f analyzers.Finding) bool {
		return f.Rule == fanout.PerDeliveryRule && strings.Contains(f.Evidence, "JSON encoding")
	})
	if i < 0 {
		t.Fatalf("no per-delivery finding on the encode: %+v\nexperiment %+v", d.Findings, d.Experiment)
	}
	f := d.Findings[i]
	if f.Class != "cacheable" || f.CPUShare < 0.05 || !strings.Contains(strings.Join(f.Frames, " "), "wsjson") ||
		!strings.Contains(f.Suggestion, "encode once per event, write the same bytes to each subscriber") {
		t.Errorf("finding %+v", f)
	}
	if !strings.Contains(md, "**per-delivery-work** (cacheable") || !strings.Contains(md, "Stack: `encoding/json") {
		t.Errorf("report.md:\n%s", md)
	}

	code, stderr, d, _ = wsPushRun(t, bin, "once")
	if code != exitOK || d.Experiment == nil || d.Experiment.Void != "" || d.Experiment.Skipped != "" {
		t.Fatalf("exit %d, experiment %+v\n%s", code, d.Experiment, stderr)
	}
	for _, f := range d.Findings {
		if f.Rule == fanout.PerDeliveryRule {
			t.Errorf("claimed on a server that encodes once per event: %s", f.Evidence)
		}
	}
}

// TestWSRoomIgnored: a server that sends every event to every connection,
// published without {room}: probe warns before the run, and the
// experiment sees the empty room's events arrive, voids itself and claims
// nothing.
func TestWSRoomIgnored(t *testing.T) {
	bin := testbuild.Program(t, "./testdata/wspush")
	code, stderr, d, md := wsPushRun(t, bin, "ignore-room", "--rooms", "1", "--publish-body", `{"data":"{event}"}`)
	if code != exitOK || d.Failed() {
		t.Fatalf("exit %d, verdict %q\n%s", code, d.Verdict, stderr)
	}
	if !slices.ContainsFunc(d.Warnings, func(w result.Warning) bool {
		return w.Kind == "publish-without-room" && strings.Contains(w.Message, "neither --publish-path (/publish) nor "+
			"--publish-body holds {room}")
	}) {
		t.Errorf("warnings %+v", d.Warnings)
	}
	e := d.Experiment
	if e == nil || e.Void == "" || e.EmptyReceipts == 0 || e.EmptyConns != 12 || len(e.Work) != 0 {
		t.Fatalf("experiment %+v", e)
	}
	for _, f := range d.Findings {
		if f.Rule == fanout.PerDeliveryRule {
			t.Errorf("a finding from a void experiment: %s", f.Evidence)
		}
	}
	if !strings.Contains(md, "per-delivery experiment void: ") || !strings.Contains(md, "arrived at 12 of the 12 connections") {
		t.Errorf("report.md:\n%s", md)
	}
}
