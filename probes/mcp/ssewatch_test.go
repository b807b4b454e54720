package mcp

import (
	"bytes"
	"testing"

	"github.com/probehq/probe/probes"
)

// Lines end at CR LF, LF or CR (the event stream format): a stream of
// CR-only lines, and a data field without a colon, are read alike by the
// watch and by readRPCReply, in pieces of any size.
func TestWatchRPCReplyLineEnds(t *testing.T) {
	tools := `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`
	for _, stream := range []string{
		"event: message\rdata: " + tools + "\r\r",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\rdata:" + tools + "\r\r",
		"data: {\"jsonrpc\":\"2.0\",\"id\":2,\rdata\rdata: \"result\":{}}\r\n\r\n",
	} {
		msg, err := readRPCReply(&probes.Reply{Body: []byte(stream), Header: func(string) string { return "text/event-stream" }})
		if err != nil || msg.Result == nil {
			t.Errorf("%q: readRPCReply %v, result %s", stream, err, msg.Result)
		}
		for _, size := range []int{1, 2, 7, len(stream)} {
			watch, got := watchRPCReply(), false
			for i := 0; i < len(stream) && !got; i += size {
				got = watch([]byte(stream[i:min(i+size, len(stream))]))
			}
			if !got {
				t.Errorf("%q in pieces of %d: never complete", stream, size)
			}
		}
	}
}

// A hostile stream costs the watch no more than one event's data up to
// maxWatchedEvent: an endless line of no data field is not kept, and an
// event whose data passes the bound makes the watch give up (the reply
// is then read to its end, as without a watch).
func TestWatchRPCReplyMemoryBound(t *testing.T) {
	var w sseWatch
	junk := bytes.Repeat([]byte("x"), 64<<10)
	w.more([]byte(": a comment that never ends "))
	for range 256 { // 16 MiB of one line
		if w.more(junk) {
			t.Fatal("complete on a comment")
		}
	}
	if cap(w.field) > 64 || len(w.data) != 0 {
		t.Errorf("an endless comment line kept: field %d bytes, data %d", cap(w.field), len(w.data))
	}

	w = sseWatch{}
	w.more([]byte("data: "))
	for range 2 * maxWatchedEvent / len(junk) { // data without a blank line, twice the bound
		w.more(junk)
	}
	if !w.gaveUp || cap(w.data) != 0 {
		t.Errorf("data past the bound: gave up %t, %d bytes kept", w.gaveUp, cap(w.data))
	}
	if w.more([]byte("\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n")) {
		t.Error("a watch that gave up said complete")
	}
}
