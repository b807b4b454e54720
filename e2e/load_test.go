package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/probehq/probe/report"
)

// TestAllAgainstTheFixture starts the fixture as probe does (this test
// binary stands in for the probe binary) and runs every microload briefly.
func TestAllAgainstTheFixture(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "all", "--notes", "60", "--duration", "1s", "--warmup", "200ms",
		"--concurrency", "4", "--json", "--out", out)
	if code != exitError { // the fixture's broken feed fails its checks, as it should
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep report.Suite
	decodeStdout(t, "all", stdout, &rep)
	if len(rep.Runs) != 6 {
		t.Fatalf("%d microloads ran: %s", len(rep.Runs), stderr)
	}
	for _, r := range rep.Runs {
		if r.Latency.Requests == 0 || r.TargetProcess == nil {
			t.Errorf("%s: %+v", r.Microload, r)
		}
		wantErrors := r.Microload == "feed"
		if (r.Latency.Errors > 0) != wantErrors {
			t.Errorf("%s: %d errors %v", r.Microload, r.Latency.Errors, r.Errors)
		}
		if wantErrors {
			if _, ok := r.Errors["GET /feeds/podcast.xml: empty feed body"]; !ok {
				t.Errorf("feed errors: %v", r.Errors)
			}
		}
	}
}

// TestTargetKilledByItsLoad is seed 002's story end to end: one stored query
// with a deep recursion kills the per-request fixture; the report keeps what
// was measured and classifies the death.
func TestTargetKilledByItsLoad(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "http", "--path", "/q/link-walk", "--param", "depth=5,200000",
		"--notes", "60", "--duration", "60s", "--warmup", "0s", "--concurrency", "1", "--json", "--out", out)
	if code != exitError {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if last := strings.TrimSpace(stderr[strings.LastIndex(strings.TrimSpace(stderr), "\n")+1:]); !strings.HasPrefix(last,
		"probe: the run ended early (target exited: exit status 2: fatal error: stack overflow)") {
		t.Errorf("last line %q", last)
	}
	var rep report.Run
	decodeStdout(t, "http", stdout, &rep)
	if len(rep.Crashes) != 1 || rep.Crashes[0].Class != "stack-overflow" || !strings.Contains(rep.Crashes[0].Evidence,
		"fatal error: stack overflow") {
		t.Errorf("crashes %+v", rep.Crashes)
	}
	// At most the request in flight fails with the target's death; on a
	// busy machine the deep query can outlast --timeout first, and a
	// timeout is an error of its own, said as one.
	timeouts := int64(0)
	for kind, n := range rep.Errors {
		if strings.Contains(kind, "timeout") {
			timeouts += n
		}
	}
	if rep.Latency.Requests == 0 || rep.Latency.Errors-timeouts > 1 || !strings.Contains(rep.Ended, "target exited") {
		t.Errorf("ended %q after %d requests, %d errors (%v)", rep.Ended, rep.Latency.Requests, rep.Latency.Errors, rep.Errors)
	}
}
