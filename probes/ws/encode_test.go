package ws_test

import (
	"strings"
	"testing"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/internal/slowtest"
)

// encodeConns are the encoding hubs' connections: 4 subscribers a room,
// so that an encode once per event is measured beside its deliveries.
const encodeConns = 12

// A hub that encodes each event again for every subscriber, inside the
// WebSocket library's call: a per-delivery-work finding on the encode,
// cacheable, with its share, its stack and the fix.
func TestExperimentFindsTheEncodeRepeatedPerSubscriber(t *testing.T) {
	slowtest.Measures(t)
	t.Parallel()
	_, found, _ := experimentOf(t, "encode-per-subscriber", encodeConns)
	var f *analyzers.Finding
	for i := range found {
		if strings.Contains(found[i].Evidence, "JSON encoding") {
			f = &found[i]
		}
	}
	if f == nil {
		t.Fatalf("no per-delivery finding on the encode repeated for each subscriber: %+v", found)
	}
	if f.Class != "cacheable" || f.CPUShare < 0.05 || !strings.Contains(f.Suggestion, "encode once per event, write the same "+
		"bytes to each subscriber") {
		t.Errorf("class %s, share %.2f, fix %q", f.Class, f.CPUShare, f.Suggestion)
	}
	stack := strings.Join(f.Frames, " ← ")
	if !strings.Contains(stack, "encoding/json") || !strings.Contains(stack, "wsjson") || !strings.Contains(stack, "pushhub.write") ||
		!strings.Contains(f.Evidence, "its heaviest stack: ") {
		t.Errorf("stack %q, evidence %q", stack, f.Evidence)
	}
}

// The trap: the same events encoded once each and the bytes written to
// every subscriber. The encode is per event; nothing is claimed.
func TestExperimentClaimsNothingOfAnEncodeOncePerEvent(t *testing.T) {
	slowtest.Measures(t)
	t.Parallel()
	_, found, work := experimentOf(t, "encode-once", encodeConns)
	for _, f := range found {
		t.Errorf("claimed per delivery on a hub that encodes once per event: %s", f.Evidence)
	}
	measured := false
	for _, w := range work {
		if strings.HasSuffix(w.Function, "pushhub.(*Hub).publish") && (w.Verdict == "per-event" || w.Verdict == "noisy") {
			measured = true
		}
	}
	if !measured {
		t.Errorf("the publish's encode was not measured per event: %+v", work)
	}
}
