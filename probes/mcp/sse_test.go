package mcp

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/probes"
)

// An SDK server whose event streams stay open after their result (a
// proxy that holds them, a server that streams on): each call is timed to
// its result, none fails, and the run says the streams were cut.
func TestEventStreamsKeptOpenAfterTheResult(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		sdk := sdkHandler(stateless, false)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sdk.ServeHTTP(w, r)
			if strings.Contains(w.Header().Get("Content-Type"), "text/event-stream") {
				select { // the stream stays open after the SDK's handler is done
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}
		}))
		run, err := probes.RunLoad(context.Background(), &ToolsList{Path: "/"}, targetOf(t, srv),
			probes.LoadOptions{Concurrency: 2, Duration: time.Second, Timeout: 5 * time.Second})
		srv.Close()
		if err != nil {
			t.Fatalf("stateless=%t: %v", stateless, err)
		}
		calls, errs := run.Requests()
		if calls == 0 || errs != 0 {
			t.Fatalf("stateless=%t: %d calls, %d errors %v", stateless, calls, errs, run.Errors)
		}
		for _, op := range run.Ops {
			if op.Name == "tools/list" && op.Latency.ValueAtQuantile(50) >= h1.StreamGrace.Microseconds()/2 {
				t.Errorf("stateless=%t: tools/list's median %d µs: timed to the stream's cut, not the result",
					stateless, op.Latency.ValueAtQuantile(50))
			}
		}
		cut := false
		for _, w := range run.Warnings {
			cut = cut || w.Kind == "stream-kept-open"
		}
		if !cut {
			t.Errorf("stateless=%t: no stream-kept-open warning in %v", stateless, run.Warnings)
		}
	}
}

// The watch, told an event stream in pieces of any size, says complete
// exactly when the stream so far holds an answering event: the whole
// stream's reading (readRPCReply) agrees, and a stream cut just before
// the answer's blank line is not complete yet.
func TestWatchRPCReplyInPieces(t *testing.T) {
	tools := `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`
	for _, stream := range []string{
		"event: message\nid: 1_0\ndata: " + tools + "\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":2,\r\ndata: \"result\":{}}\r\n\r\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: " + tools + "\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n\ndata: " + tools + "\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n",
		"data: hello\n\n: a comment\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-1}}\n\n",
	} {
		msg, err := readRPCReply(&probes.Reply{Body: []byte(stream), Header: func(string) string { return "text/event-stream" }})
		want := err == nil && (msg.Result != nil || msg.Error != nil)
		for _, size := range []int{1, 2, 7, len(stream)} {
			watch := watchRPCReply()
			got, at := false, 0
			for i := 0; i < len(stream) && !got; i += size {
				got, at = watch([]byte(stream[i:min(i+size, len(stream))])), min(i+size, len(stream))
			}
			if got != want {
				t.Errorf("%q in pieces of %d: complete %t, want %t", stream, size, got, want)
			}
			// A CR ends a line (the format's CR LF, LF or CR): a CR LF
			// blank line ends the event at its CR.
			if got && size == 1 && !strings.HasSuffix(stream[:at], "\n\n") && !strings.HasSuffix(stream[:at], "\r\n\r") {
				t.Errorf("%q: complete at %d, before the event's blank line", stream, at)
			}
		}
	}
	if watch := watchRPCReply(); watch([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n\n")) {
		t.Error("a JSON body taken for an event stream")
	}
}

// A stream of a million small events is told to the watch once: a cost
// linear in its length (the watch parsed the whole body again at every
// read before, a hostile stream's square).
func BenchmarkWatchRPCReply(b *testing.B) {
	event := []byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
	chunk := bytes.Repeat(event, 32<<10/len(event))
	for b.Loop() {
		watch := watchRPCReply()
		for range 64 { // 2 MiB in 32 KiB reads
			if watch(chunk) {
				b.Fatal("complete on notifications")
			}
		}
	}
}
