package pipeline

import (
	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/fanout"
	"github.com/probehq/probe/report/wsreport"
	"github.com/probehq/probe/result"
)

// wsExperiment reads the per-delivery experiment (probes/ws): each
// function's CPU per event with subscribers and without, and the
// findings of the work that runs once per delivery.
func wsExperiment(e *result.WSExperiment, rules []Rule, mainModule string) (*wsreport.WSExperiment, []analyzers.Finding) {
	out := &wsreport.WSExperiment{EmptyRoom: e.EmptyRoom, Skipped: e.Skipped, Void: e.Void,
		EmptyReceipts: e.EmptyReceipts, EmptyConns: e.EmptyConns, Retried: e.Retried}
	var slots []fanout.Slot
	var events int
	var deliveries int64
	for _, s := range e.Slots {
		out.Slots = append(out.Slots, wsreport.WSExperimentSlot{Kind: s.Kind, Events: s.Events, Failed: s.Failed,
			Deliveries: s.Deliveries, Arrived: s.Arrived, Late: s.Late})
		if s.Kind == "rooms" {
			events += s.Events
			deliveries += s.Deliveries
		}
		if s.CPU != nil {
			slots = append(slots, fanout.Slot{CPU: s.CPU, Subscribed: s.Kind == "rooms", Events: s.Events, Deliveries: s.Deliveries})
		}
	}
	if events > 0 {
		out.DeliveriesPerEvent = float64(deliveries) / float64(events)
	}
	if e.Skipped != "" || e.Void != "" {
		return out, nil // void evidence is no evidence: no work, no finding
	}
	if out.DeliveriesPerEvent < 2 {
		out.Skipped = "the rooms' events had fewer than 2 subscribers each: per event and per delivery cannot be told apart"
		return out, nil
	}
	found, work := fanout.PerDelivery(slots, rules, mainModule)
	out.Work = work
	if out.Work == nil {
		out.Work = []fanout.DeliveryWork{}
	}
	return out, found
}

// crossReference tells a finding of the profiles alone whose own frame
// the experiment found done per delivery where its repetition comes
// from: the subscribers, not the requests.
func crossReference(findings, perDelivery []analyzers.Finding) {
	for i := range findings {
		f := &findings[i]
		for _, p := range perDelivery {
			if f.OwnFrame != "" && f.OwnFrame == p.OwnFrame {
				f.Evidence += "; the per-delivery experiment found " + p.OwnFrame + " done once for every subscriber of every event (" + p.Rule + ")"
			}
		}
	}
}
