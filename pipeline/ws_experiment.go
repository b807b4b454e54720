package pipeline

import (
	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes/ws"
	"github.com/probehq/probe/report"
)

// wsExperiment reads the per-delivery experiment (probes/ws): each
// function's CPU per event with subscribers and without, and the
// findings of the work that runs once per delivery.
func wsExperiment(e *ws.Experiment, rules []Rule) (*report.WSExperiment, []analyzers.Finding) {
	out := &report.WSExperiment{EmptyRoom: e.EmptyRoom, Skipped: e.Skipped}
	var slots []analyzers.FanoutSlot
	var events int
	var deliveries int64
	for _, s := range e.Slots {
		out.Slots = append(out.Slots, report.WSExperimentSlot{Kind: s.Kind, Events: s.Events, Failed: s.Failed, Deliveries: s.Deliveries})
		if s.Kind == "rooms" {
			events += s.Events
			deliveries += s.Deliveries
		}
		if s.CPU != nil {
			slots = append(slots, analyzers.FanoutSlot{CPU: s.CPU, Subscribed: s.Kind == "rooms", Events: s.Events, Deliveries: s.Deliveries})
		}
	}
	if events > 0 {
		out.DeliveriesPerEvent = float64(deliveries) / float64(events)
	}
	if e.Skipped != "" {
		return out, nil
	}
	if out.DeliveriesPerEvent < 2 {
		out.Skipped = "the rooms' events had fewer than 2 subscribers each: per event and per delivery cannot be told apart"
		return out, nil
	}
	found, work := analyzers.PerDelivery(slots, rules)
	out.Work = work
	if out.Work == nil {
		out.Work = []analyzers.DeliveryWork{}
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
