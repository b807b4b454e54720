package fuzz

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// readUntilWhole tells a reply's watch each byte once, however many lines
// each read holds (it asked again over the whole body at every read that
// held a line end: a stream of many small events cost its length squared),
// and stops at the watch's word.
func TestReadUntilWholeTellsEachByteOnce(t *testing.T) {
	note := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"
	body := strings.Repeat(note, (4<<20)/len(note)) + "data: RESULT\n\n" + strings.Repeat(note, 100)
	told, watched := 0, 0
	var seen []byte
	whole := func(http.Header) func([]byte) bool {
		watched++
		return func(more []byte) bool {
			told += len(more)
			seen = append(seen, more...)
			return bytes.Contains(seen[max(0, len(seen)-len(more)-len("RESULT\n\n")):], []byte("RESULT\n\n"))
		}
	}
	resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
	got, err := readUntilWhole(resp, whole)
	end := strings.Index(body, "RESULT\n\n") + len("RESULT\n\n")
	if err != nil || watched != 1 || told != len(got) || len(got) < end || len(got) > end+32<<10 {
		t.Errorf("%v: one watch made %d times, told %d bytes of %d read; whole at %d", err, watched, told, len(got), end)
	}
	if got, _ := readUntilWhole(&http.Response{Body: io.NopCloser(strings.NewReader(body))},
		func(http.Header) func([]byte) bool { return nil }); len(got) != len(body) {
		t.Errorf("no watch: %d bytes read of %d", len(got), len(body))
	}
}
