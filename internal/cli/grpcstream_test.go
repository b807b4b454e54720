package cli

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/probehq/probe/internal/testservers/notesstream"
)

// serveStreamingNotes serves a notes service whose List sends a message
// per item the caller may read, and for the tag "watch" one every 20 ms
// until the call ends: a watch.
func serveStreamingNotes(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(notesstream.Serve(l, notesstream.PerMessage{}).Stop)
	return "http://" + l.Addr().String()
}

type streamReportJSON struct {
	Latency struct {
		Requests int64 `json:"requests"`
		Errors   int64 `json:"errors"`
	} `json:"latency"`
	Stream *struct {
		Method   string `json:"method"`
		Calls    int64  `json:"calls"`
		Messages struct {
			Fewest, Median, Most int
			Total                int64
		} `json:"messages"`
		Watch *struct {
			After          float64  `json:"after_s"`
			Span           float64  `json:"span_s"`
			FirstMessageMS *float64 `json:"first_message_ms"`
			PerSecond      float64  `json:"messages_per_s"`
		} `json:"watch"`
	} `json:"stream"`
	Warnings []struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"warnings"`
}

func runStream(t *testing.T, args ...string) (streamReportJSON, string) {
	t.Helper()
	code, stdout, stderr := probeCmd.Run(t, context.Background(), append([]string{"grpc", "--concurrency", "3",
		"--warmup", "0s", "--json", "--out", t.TempDir()}, args...)...)
	if code != exitOK {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var rep streamReportJSON
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %.300s", err, stdout)
	}
	return rep, stderr
}

func warning(rep streamReportJSON, kind string) string {
	for _, w := range rep.Warnings {
		if w.Kind == kind {
			return w.Message
		}
	}
	return ""
}

// Calls that get 50, 100 and 200 messages are said as that range with its
// median, in report.json and in the note: never one figure.
func TestGRPCStreamCountsAreARangeWithAMedian(t *testing.T) {
	url := serveStreamingNotes(t)
	rep, _ := runStream(t, "--target", url, "--call", "probe.fixture.Notes/List", "--data", `{"limit": {n}}`,
		"--param", "n=50,100,200", "--duration", "1s")
	st := rep.Stream
	if st == nil || st.Calls < 6 || st.Messages.Fewest != 50 || st.Messages.Median != 100 || st.Messages.Most != 200 ||
		st.Watch != nil || rep.Latency.Errors != 0 {
		t.Fatalf("stream %+v, errors %d: want 50 to 200 messages a call, median 100, no watch", st, rep.Latency.Errors)
	}
	if st.Messages.Total < 50*st.Calls || st.Messages.Total > 200*st.Calls {
		t.Errorf("%d messages in %d calls", st.Messages.Total, st.Calls)
	}
	if note := warning(rep, "grpc-stream"); !strings.Contains(note, "50 to 200 messages a call, median 100") {
		t.Errorf("grpc-stream note %q: want the range and its median", note)
	}
}

// A stream that never ends (a watch) is said at once on stderr and in the
// report, measured by messages per second and time to first message; its
// calls are spans of the watch, not failures, and not zero requests.
func TestGRPCWatchIsSaidAtOnce(t *testing.T) {
	url := serveStreamingNotes(t)
	rep, stderr := runStream(t, "--target", url, "--call", "probe.fixture.Notes/List", "--data", `{"tag": "watch"}`,
		"--duration", "2s", "--timeout", "2s")
	if !strings.Contains(stderr, "probe: probe.fixture.Notes/List is a watch: its first stream had not ended after 2s") {
		t.Errorf("stderr does not say the watch: %s", stderr)
	}
	st := rep.Stream
	if st == nil || st.Watch == nil {
		t.Fatalf("stream %+v: want a watch", st)
	}
	w := st.Watch
	// One message every 20 ms: 50 a second, less the server's and the
	// machine's delays; never zero.
	if w.FirstMessageMS == nil || *w.FirstMessageMS <= 0 || *w.FirstMessageMS > 1000 || w.PerSecond < 10 || w.PerSecond > 55 ||
		w.After != 2 || w.Span <= 0 || w.Span >= 2 {
		t.Errorf("watch %+v (first message %v): want a first message, 10 to 55 messages a second", w, w.FirstMessageMS)
	}
	if rep.Latency.Requests == 0 || rep.Latency.Errors != 0 || st.Calls == 0 || st.Messages.Most == 0 {
		t.Errorf("%d requests, %d errors, %d calls counted: want the watch's spans as calls, none failed",
			rep.Latency.Requests, rep.Latency.Errors, st.Calls)
	}
	if msg := warning(rep, "grpc-watch"); !strings.Contains(msg, "messages per second") || !strings.Contains(msg, "first message after") {
		t.Errorf("grpc-watch warning %q", msg)
	}
}
