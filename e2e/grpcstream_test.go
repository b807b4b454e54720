package e2e

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/report"

	"github.com/probehq/probe/internal/testbuild"
)

// startGRPCStream builds and starts testdata/grpcstream (a grpc-go server
// of its own process, pprof on its port) and returns its URL.
func startGRPCStream(t *testing.T) string {
	t.Helper()
	bin := testbuild.Program(t, "./testdata/grpcstream")
	addr := freeAddr(t)
	startProcess(t, bin, "-addr", addr)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("testdata/grpcstream does not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr
}

// probe grpc --profile on a server stream whose per-result callback (a map
// check, a cursor encode, the send) is most of the CPU: per-message work,
// with its share as pprof -focus shows it, and no per-request-full-scan;
// the calls' counts a range with its median. A watch on the same server is
// said on stderr and measured, not requests 0.
func TestGRPCStreamSendLoopIsPerMessageWork(t *testing.T) {
	url := startGRPCStream(t)
	out := t.TempDir()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "grpc", "--target", url, "--call", "probe.fixture.Notes/List",
		"--data", `{"limit": {n}}`, "--param", "n=150,300,600", "--profile", "--duration", "5s", "--warmup", "1s",
		"--concurrency", "4", "--json", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep report.Run
	decodeStdout(t, "list", stdout, &rep)
	if st := rep.Stream; st == nil || st.Messages.Fewest != 150 || st.Messages.Most != 600 || st.Messages.Median != 300 {
		t.Errorf("stream %+v: want 150 to 600 messages a call, median 300", rep.Stream)
	}
	var per bool
	for _, f := range rep.Findings {
		switch f.Rule {
		case "per-request-full-scan":
			t.Errorf("a per-request-full-scan at %s: %s", f.OwnFrame, f.Evidence)
		case "per-message-work":
			per = true
			if f.Class != "info" || !strings.Contains(f.OwnFrame, "List.func1") || !strings.Contains(f.Evidence, "per message sent: ") ||
				!strings.Contains(f.Evidence, "notesstream.EncodeCursor") || f.CPUShare < 0.1 {
				t.Errorf("per-message-work [%s] %.0f%% at %s: %s", f.Class, 100*f.CPUShare, f.OwnFrame, f.Evidence)
			}
		}
	}
	if !per {
		t.Errorf("no per-message-work among %+v", rep.Findings)
	}
	checkSharesAgainstPprof(t, "grpcstream", filepath.Join(out, "cpu.pb.gz"), rep.Findings)

	code, stdout, stderr = probeCmd.Run(t, context.Background(), "grpc", "--target", url, "--call", "probe.fixture.Notes/List",
		"--data", `{"tag": "watch"}`, "--duration", "2s", "--warmup", "0s", "--timeout", "2s", "--concurrency", "2",
		"--json", "--out", t.TempDir())
	if code != exitOK || !strings.Contains(stderr, "is a watch: its first stream had not ended after 2s") {
		t.Fatalf("watch: exit %d: %s", code, stderr)
	}
	rep = report.Run{}
	decodeStdout(t, "watch", stdout, &rep)
	if w := rep.Stream.Watch; w == nil || w.FirstMessageMS == nil || w.MessagesPerSecond < 10 || rep.Latency.Requests == 0 ||
		rep.Latency.Errors != 0 {
		t.Errorf("watch %+v, %d requests, %d errors: want it measured, its calls spans", w, rep.Latency.Requests, rep.Latency.Errors)
	}
}
