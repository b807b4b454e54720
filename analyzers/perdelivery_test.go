package analyzers

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// cpuProfile is a CPU profile of stacks (leaf first), each sampled n times
// at 10 ms.
func cpuProfile(stacks map[string][]string, n map[string]int) *profile.Profile {
	p := &profile.Profile{Period: 10_000_000, SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	fns := map[string]*profile.Function{}
	for key, st := range stacks {
		var locs []*profile.Location
		for _, name := range st {
			f := fns[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(fns) + 1), Name: name, Filename: "/src/" + name + ".go"}
				fns[name] = f
				p.Function = append(p.Function, f)
			}
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, l)
			locs = append(locs, l)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{int64(n[key]), int64(n[key]) * 10_000_000}})
	}
	return p
}

// The experiment's reading: a socket write is never per-delivery work,
// however it scales; a hash under own code that vanishes without
// subscribers is.
func TestPerDeliveryLeavesTheSocketWriteOut(t *testing.T) {
	stacks := map[string][]string{
		"hash":  {"crypto/sha256.block", "example.com/hub.authorise", "example.com/hub.publish"},
		"write": {"syscall.Syscall", "internal/poll.(*FD).Write", "net.(*conn).Write", "example.com/hub.writer"},
		"sort":  {"slices.Sort", "example.com/hub.publish"},
	}
	with := cpuProfile(stacks, map[string]int{"hash": 50, "write": 200, "sort": 40})
	without := cpuProfile(stacks, map[string]int{"hash": 1, "write": 0, "sort": 40})
	var slots []FanoutSlot
	for range 2 {
		slots = append(slots, FanoutSlot{CPU: with, Subscribed: true, Events: 100, Deliveries: 1000},
			FanoutSlot{CPU: without, Events: 100})
	}
	found, work := PerDelivery(slots, DefaultRules())
	if len(found) != 1 || found[0].OwnFrame != "example.com/hub.authorise" || found[0].Class != "cacheable" {
		t.Fatalf("findings %+v, work %+v", found, work)
	}
	for _, w := range work {
		if w.Function == "example.com/hub.writer" {
			t.Errorf("the socket write was measured as work: %+v", w)
		}
		if w.Function == "example.com/hub.publish" && w.Verdict != "per-event" {
			t.Errorf("publish's sort, the same per event either way: %+v", w)
		}
	}
	if top := OwnTop(with, 3); len(top) == 0 || top[0].Work != SocketWrites {
		t.Errorf("own top %+v, want the socket writes first", top)
	}
}

// An own function that sorts once per event and hashes once per
// subscriber, both directly: the function as a whole does not fall to
// near nothing without subscribers, its hashing call does.
func TestPerDeliveryFindsTheCallInsideAMixedFunction(t *testing.T) {
	stacks := map[string][]string{
		"hash": {"crypto/sha256.Sum256", "example.com/hub.publish"},
		"sort": {"slices.Sort", "example.com/hub.publish"},
	}
	with := cpuProfile(stacks, map[string]int{"hash": 60, "sort": 60})
	without := cpuProfile(stacks, map[string]int{"hash": 0, "sort": 60})
	var slots []FanoutSlot
	for range 2 {
		slots = append(slots, FanoutSlot{CPU: with, Subscribed: true, Events: 100, Deliveries: 1000},
			FanoutSlot{CPU: without, Events: 100})
	}
	found, work := PerDelivery(slots, DefaultRules())
	if len(found) != 1 || !strings.HasPrefix(found[0].Evidence, "crypto/sha256.Sum256 called from example.com/hub.publish") {
		t.Fatalf("findings %+v, work %+v", found, work)
	}
	for _, w := range work {
		if w.Calls == "" && w.Verdict == "per-delivery" || w.Calls == "slices.Sort" && w.Verdict != "per-event" {
			t.Errorf("%+v", w)
		}
	}
}
