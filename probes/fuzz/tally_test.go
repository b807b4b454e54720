package fuzz

import (
	"fmt"
	"strings"
	"testing"

	"github.com/probehq/probe/result"
)

// An error reply that carries the request's id (and one worded anew every
// time) is tallied folded and bounded: one reason for the ids, at most
// result.MaxReasons for the rest, every reply counted, and a bounded pool
// of inputs kept for new kinds of reply.
func TestTallyFoldsAndBoundsReasons(t *testing.T) {
	tl := newTally(1)
	letters := func(n int) string {
		s := ""
		for ; n > 0; n /= 26 {
			s += string(rune('a' + n%26))
		}
		return s
	}
	for i := 1; i <= 10_000; i++ {
		reason := fmt.Sprintf("request %08x-%04x-4abc-8def-%012x failed", i*7919, i%65536, i*104729)
		if i%2 == 0 {
			reason = "shard " + letters(i) + " is read-only"
		}
		tl.note(result.FuzzInput{Template: 0}, Outcome{Status: 500, Reason: reason})
	}
	var total int64
	for _, n := range tl.failures.M {
		total += n
	}
	if total != 10_000 || len(tl.failures.M) > result.MaxReasons+1 || tl.failures.M["500 request <id> failed"] != 5000 ||
		tl.failures.M[result.OtherReasons("")] == 0 {
		t.Errorf("%d reasons, %d replies, ids %d", len(tl.failures.M), total, tl.failures.M["500 request <id> failed"])
	}
	if len(tl.pool[0]) > maxKinds {
		t.Errorf("%d inputs kept", len(tl.pool[0]))
	}
	for k := range tl.kinds {
		if strings.Contains(k, "request ") && !strings.Contains(k, "<id>") {
			t.Errorf("an id in a kind: %s", k)
		}
	}
}
