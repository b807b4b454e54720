package wsreport

import (
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/report/internal/reporttest"
	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/fanout"
)

// goldenWS is a fan-out run of two rounds, the second after a drop, with
// one event missing, one twice and one in the wrong room, profiled.
func goldenWS() *WS {
	hist := func(from, step int64) *hdrhistogram.Histogram {
		h := hdrhistogram.New(1, 600_000_000, 3)
		for i := int64(0); i < 100; i++ {
			h.RecordValue(from + i*step)
		}
		return h
	}
	r1, r2 := hist(800, 20), hist(1500, 400)
	all := hdrhistogram.New(1, 600_000_000, 3)
	all.Merge(r1)
	all.Merge(r2)
	res := &result.WS{Connections: 20, Rooms: 2, Ready: 1234 * time.Millisecond, ReadyCount: 20, Dropped: 2, Reconnected: 2,
		Totals:  result.WSCounts{Expected: 198, Delivered: 197, Missing: 1, Duplicated: 1, Misrouted: 1},
		PerRoom: []result.WSCounts{{Expected: 99, Delivered: 99}, {Expected: 99, Delivered: 98, Missing: 1, Duplicated: 1, Misrouted: 1}},
		Rounds: []*result.WSRound{
			{Round: 1, Published: 10, Counts: result.WSCounts{Expected: 100, Delivered: 100}, Latency: r1, Took: 2 * time.Second,
				ServerCPU: 400 * time.Millisecond, Goroutines: 43},
			{Round: 2, Published: 10, Away: 2, IdleBefore: 20 * time.Second,
				Counts:  result.WSCounts{Expected: 98, Delivered: 97, Missing: 1, Duplicated: 1, Misrouted: 1},
				Latency: r2, Took: 2100 * time.Millisecond, ServerCPU: 500 * time.Millisecond, Goroutines: 39},
		},
		Latency: all, ServerRSSIdle: 40 << 20, ServerRSSPeak: 60 << 20, ServerFDsPeak: 31, OwnRSSPeak: 30 << 20,
		OwnCPU: 300 * time.Millisecond, ServerCPU: 900 * time.Millisecond,
		Raw: map[string][]byte{"mutex.pb.gz": []byte("x"), "wall-round-02.pb.gz": []byte("w")},
		Timeline: []result.WSSample{{AtS: 0, RSSBytes: 40 << 20, FDs: 11, Threads: 6},
			{AtS: 1, CPUCores: 0.2, RSSBytes: 52 << 20, FDs: 31, Threads: 7, Goroutines: 43},
			{AtS: 2, CPUCores: 0.45, RSSBytes: 60 << 20, FDs: 31, Threads: 8}}}
	cfg := WSConfig{Connections: 20, Rooms: 2, Events: 5, Rounds: 2, PauseS: 2, IdleS: 20, Drop: 2, ConnectRate: 1000, Auth: "query",
		Publish: "http", DeliverTimeoutS: 10, SourceAddrs: 4}
	perDelivery := analyzers.Finding{Rule: fanout.PerDeliveryRule, Class: "cacheable", Severity: "high", CPUShare: 0.55,
		Frames: []string{"site.tokenHash"}, OwnFrame: "site.tokenHash",
		Evidence: "site.tokenHash (hashing, as repeated-hash names it) runs once for every subscriber of every event (10 " +
			"deliveries per event): …",
		Suggestion: "It repeats per subscriber, not per event: authorise (or hash) once per subscription, when it joins, " +
			"not once per delivery."}
	a := WSAnalysis{Tops: [][]analyzers.ShareOfWork{{{Work: "other", Share: 0.6}},
		{{Work: "other", Share: 0.3}, {Work: "repeated-hash", Share: 0.7}}},
		OwnTops: [][]analyzers.ShareOfWork{{{Work: "github.com/probehq/probe/fixtures/site.(*wsHub).serveWS", Share: 0.5}},
			{{Work: "github.com/probehq/probe/fixtures/site.tokenHash", Share: 0.6},
				{Work: "github.com/probehq/probe/fixtures/site.(*wsHub).publish", Share: 0.1}}},
		Experiment: &WSExperiment{EmptyRoom: "probe-experiment-1", DeliveriesPerEvent: 10,
			Slots: []WSExperimentSlot{{Kind: "rooms", Events: 40, Deliveries: 400}, {Kind: "empty", Events: 40}},
			Work: []fanout.DeliveryWork{{Function: "site.tokenHash", Kind: "repeated-hash", PerEventUS: 250, HalvesUS: [2]float64{240, 260},
				EmptyPerEventUS: 2, PerDeliveryUS: 24.8, Samples: 100, EmptySamples: 1, Share: 0.55, Verdict: "per-delivery"}}},
		Findings: []analyzers.Finding{{Rule: "contention", Class: "contention", Severity: "high", WaitShare: 0.8,
			OwnFrame:   "site.(*wsHub).publish",
			Evidence:   "requests waited 1.2s on a lock in site.(*wsHub).publish; held by site.(*wsHub).revalidate 97%",
			Suggestion: "hold the lock for less"},
			perDelivery},
		Unexplained: []analyzers.Unexplained{{Function: "site.tokenHash",
			Path: []string{"site.(*wsHub).revalidate", "site.(*wsHub).valid", "site.tokenHash"}, CPUShare: 0.62}}}
	return WSOf(res, "http://127.0.0.1:8080", "per-request", cfg, a, 4242)
}

func TestGoldenWS(t *testing.T) {
	reporttest.GoldenFormats(t, "ws", goldenWS())
}

func TestWSFailsOnAnyWrongDelivery(t *testing.T) {
	d := goldenWS()
	if !d.Failed() || !strings.Contains(d.Verdict, "1 missing, 1 duplicated, 1 misrouted") {
		t.Fatalf("failed %v, verdict %q", d.Failed(), d.Verdict)
	}
	for _, c := range []result.WSCounts{{Expected: 5, Delivered: 5, OutOfOrder: 2}, {Expected: 5, Delivered: 5}} {
		d.Totals = c
		if d.Failed() {
			t.Errorf("%+v failed: out of order alone is reported, not a failure", c)
		}
	}
	for _, c := range []result.WSCounts{{Missing: 1}, {Duplicated: 1}, {Misrouted: 1}} {
		d.Totals = c
		if !d.Failed() {
			t.Errorf("%+v did not fail", c)
		}
	}
	d.Totals = result.WSCounts{Expected: 5, Delivered: 5}
	d.Rounds[1].PublishErrors = 2
	if !d.Failed() {
		t.Error("a run whose target refused publishes did not fail")
	}
	d.Rounds[1].PublishErrors = 0
	// Refused upgrades: every event once to the few let in is no pass.
	d.Ready.Refused, d.Ready.FirstRefusal = 3, "the target refused the WebSocket upgrade: HTTP 503 \"full\x1b[2J\""
	if d.Verdict = d.verdict(); !d.Failed() || !strings.Contains(d.Verdict, "3 of 20 upgrades refused or never ready (first: ") ||
		strings.Contains(d.Verdict, "\x1b") {
		t.Errorf("refused upgrades: failed %v, verdict %q", d.Failed(), d.Verdict)
	}
	d.Ready.Refused, d.Faults.Dropped, d.Ready.ReconnectRefused = 0, 4, 2
	if d.Verdict = d.verdict(); !d.Failed() || !strings.Contains(d.Verdict, "2 of 4 reconnections refused") {
		t.Errorf("refused reconnections: failed %v, verdict %q", d.Failed(), d.Verdict)
	}
	d.Ready.ReconnectRefused = 0
	files, err := d.Files()
	if err != nil || files["profiles/mutex.pb.gz"] == nil || files["delivery.hgrm"] == nil || files["report.html"] == nil {
		t.Fatalf("files: %v %v", err, len(files))
	}
}

// A void experiment says so, why, and lists no work; its receipts of the
// empty room's events are in report.json.
func TestWSVoidExperimentSaysSo(t *testing.T) {
	d := goldenWS()
	d.Experiment = &WSExperiment{EmptyRoom: "probe-experiment-7", EmptyReceipts: 40, EmptyConns: 20,
		Void: "40 of the events to probe-experiment-7, a room no connection joined, arrived at 20 of the 20 connections (…): " +
			"events without subscribers had subscribers, so nothing is concluded from it"}
	d.Findings = nil
	b, err := d.JSON()
	if err != nil || !strings.Contains(string(b), `"empty_room_receipts": 40`) || !strings.Contains(string(b), `"void": "40 of the events`) {
		t.Fatalf("report.json: %v\n%s", err, b)
	}
	for name, text := range map[string]string{"md": d.Markdown(), "table": reporttest.Table(d), "html": d.HTML()} {
		if !strings.Contains(text, "per-delivery experiment void: 40 of the events to probe-experiment-7") ||
			strings.Contains(text, "done once per delivery") || strings.Contains(text, "nothing found done once per delivery") {
			t.Errorf("%s:\n%s", name, text)
		}
	}
}

// Nothing found per delivery: the line says how much of the CPU the
// verdict covers (the own functions measured) and how many could be judged.
func TestWSExperimentLineSaysWhatItCovered(t *testing.T) {
	d := goldenWS()
	d.Experiment.Work = []fanout.DeliveryWork{{Function: "app/api.(*Executor).Publish", Share: 0.036, Verdict: "too-few"}}
	if l := d.experimentLine(); !strings.Contains(l, "the own functions measured took 4% of the target's CPU in the slots with "+
		"subscribers, 0 of them with samples enough to judge") {
		t.Errorf("%s", l)
	}
}
