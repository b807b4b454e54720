package pipeline

import (
	"strings"
	"testing"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/fanout"
	"github.com/probehq/probe/result"
)

// One subscriber a room: per event and per delivery are the same count,
// so the experiment says it cannot tell, and claims nothing.
func TestWSExperimentNeedsSubscribersToTellDeliveriesFromEvents(t *testing.T) {
	e := &result.WSExperiment{EmptyRoom: "probe-experiment-1", Slots: []*result.WSExperimentSlot{
		{Kind: "rooms", Events: 50, Deliveries: 50}, {Kind: "empty", Events: 50}}}
	out, found := wsExperiment(e, analyzers.DefaultRules(), "")
	if len(found) > 0 || !strings.Contains(out.Skipped, "fewer than 2 subscribers") || out.DeliveriesPerEvent != 1 {
		t.Fatalf("found %v, experiment %+v", found, out)
	}
	refused := &result.WSExperiment{Skipped: "the target refused an event to a room no connection joined"}
	if out, found := wsExperiment(refused, nil, ""); len(found) > 0 || out.Skipped != refused.Skipped {
		t.Fatalf("a skipped experiment: found %v, %+v", found, out)
	}
}

// The finding of the profiles alone on the same own function is told
// where its repetition comes from.
func TestWSExperimentPointsTheProfilesFindingAtIt(t *testing.T) {
	fs := []analyzers.Finding{{Rule: "repeated-hash", OwnFrame: "site.tokenHash", Evidence: "hashing"},
		{Rule: "contention", OwnFrame: "site.publish"}}
	crossReference(fs, []analyzers.Finding{{Rule: fanout.PerDeliveryRule, OwnFrame: "site.tokenHash"}})
	if !strings.Contains(fs[0].Evidence, "once for every subscriber") || strings.Contains(fs[1].Evidence, "subscriber") {
		t.Fatalf("%+v", fs)
	}
}
