package fanout

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/frames"
)

// cpuProfile is a CPU profile of stacks (leaf first), each sampled n times
// at 10 ms.
func cpuProfile(stacks map[string][]string, n map[string]int) *profile.Profile {
	p := &profile.Profile{Period: 10_000_000,
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	fns := map[string]*profile.Function{}
	for key, st := range stacks {
		var locs []*profile.Location
		for _, name := range st {
			f := fns[name]
			if f == nil {
				file := "/src/" + name + ".go"
				if strings.HasPrefix(name, "github.com/") { // a library, from the module cache
					file = "/root/go/pkg/mod/" + frames.PkgPath(name) + "@v1.0.0/x.go"
				}
				f = &profile.Function{ID: uint64(len(fns) + 1), Name: name, Filename: file}
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
	var slots []Slot
	for range 2 {
		slots = append(slots, Slot{CPU: with, Subscribed: true, Events: 100, Deliveries: 1000},
			Slot{CPU: without, Events: 100})
	}
	found, work := PerDelivery(slots, analyzers.DefaultRules(), "")
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
	if top := OwnTop(with, 3, analyzers.DefaultRules(), ""); len(top) == 0 || top[0].Work != SocketWrites {
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
	var slots []Slot
	for range 2 {
		slots = append(slots, Slot{CPU: with, Subscribed: true, Events: 100, Deliveries: 1000},
			Slot{CPU: without, Events: 100})
	}
	found, work := PerDelivery(slots, analyzers.DefaultRules(), "")
	if len(found) != 1 || !strings.HasPrefix(found[0].Evidence, "crypto/sha256.Sum256 called from example.com/hub.publish") {
		t.Fatalf("findings %+v, work %+v", found, work)
	}
	for _, w := range work {
		if w.Calls == "" && w.Verdict == "per-delivery" || w.Calls == "slices.Sort" && w.Verdict != "per-event" {
			t.Errorf("%+v", w)
		}
	}
}

// An encode inside the WebSocket library's call (gorilla's WriteJSON)
// is the caller's work, repeated per subscriber: a finding with the fix
// and its stack. The library's own framing (the mask) and its
// permessage-deflate compression, and the socket write under the encoder,
// are the delivery itself.
func TestPerDeliveryFindsTheEncodeInsideTheLibrarysWrite(t *testing.T) {
	stacks := map[string][]string{
		"encode": {"encoding/json.(*encodeState).marshal", "encoding/json.(*Encoder).Encode",
			"github.com/gorilla/websocket.(*Conn).WriteJSON", "example.com/push.(*client).writePump"},
		"flush": {"syscall.Syscall", "internal/poll.(*FD).Write", "net.(*conn).Write", "bufio.(*Writer).Flush", "encoding/json.(*Encoder).Encode",
			"github.com/gorilla/websocket.(*Conn).WriteJSON", "example.com/push.(*client).writePump"},
		"mask": {"github.com/gorilla/websocket.maskBytes", "github.com/gorilla/websocket.(*messageWriter).Close",
			"github.com/gorilla/websocket.(*Conn).WriteJSON", "example.com/push.(*client).writePump"},
		"deflate": {"compress/flate.(*compressor).deflate", "github.com/gorilla/websocket.(*flateWriteWrapper).Write",
			"github.com/gorilla/websocket.(*Conn).WriteMessage", "example.com/push.(*client).writeRaw"},
	}
	with := cpuProfile(stacks, map[string]int{"encode": 80, "flush": 100, "mask": 60, "deflate": 60})
	without := cpuProfile(stacks, map[string]int{})
	var slots []Slot
	for range 2 {
		slots = append(slots, Slot{CPU: with, Subscribed: true, Events: 100, Deliveries: 50_000},
			Slot{CPU: without, Events: 100})
	}
	found, work := PerDelivery(slots, analyzers.DefaultRules(), "")
	if len(found) != 1 {
		t.Fatalf("findings %+v, work %+v", found, work)
	}
	f := found[0]
	if f.OwnFrame != "example.com/push.(*client).writePump" || f.Class != "cacheable" || f.Rule != PerDeliveryRule ||
		!strings.Contains(f.Suggestion, "encode once per event, write the same bytes to each subscriber") ||
		!strings.Contains(f.Evidence, "500 deliveries per event") {
		t.Errorf("%+v", f)
	}
	// Its share is the encode's alone, of all the slots' CPU (300 samples).
	if f.CPUShare < 0.26 || f.CPUShare > 0.27 {
		t.Errorf("share %.3f, want 80/300", f.CPUShare)
	}
	if len(f.Frames) < 3 || f.Frames[0] != "encoding/json.(*Encoder).Encode" || !strings.Contains(f.Evidence,
		"WriteJSON ← example.com/push.(*client).writePump") {
		t.Errorf("stack %q, evidence %q", f.Frames, f.Evidence)
	}
	for _, w := range work {
		if w.Function == "example.com/push.(*client).writeRaw" {
			t.Errorf("permessage-deflate measured as work: %+v", w)
		}
	}
	top := OwnTop(with, 3, analyzers.DefaultRules(), "")
	if len(top) < 2 || top[0].Work != SocketWrites || top[1].Work != "example.com/push.(*client).writePump" {
		t.Errorf("own top %+v: the writes (flush, mask, deflate) first, then the encode as writePump's", top)
	}
}

// A fan-out inside a library (Centrifugo's hub enqueueing each delivery
// under the API's one Publish call a event): it grows with subscribers,
// but the library's loop is not the own function's; measured as
// in-library, never claimed. A catalogued kind under the same call (a
// hash) still is.
func TestPerDeliveryLeavesALibrarysFanoutUnclaimed(t *testing.T) {
	stacks := map[string][]string{
		"enqueue": {"sync.(*Cond).Signal", "github.com/lib/hub.(*queue).Add", "github.com/lib/hub.(*Hub).broadcast",
			"github.com/lib/hub.(*Node).Publish", "example.com/api.(*Executor).Publish"},
		"hash": {"crypto/sha256.block", "github.com/lib/hub.(*Node).sign", "example.com/api.(*Executor).sign"},
	}
	with := cpuProfile(stacks, map[string]int{"enqueue": 80, "hash": 60})
	without := cpuProfile(stacks, map[string]int{"enqueue": 2})
	var slots []Slot
	for range 2 {
		slots = append(slots, Slot{CPU: with, Subscribed: true, Events: 100, Deliveries: 1000},
			Slot{CPU: without, Events: 100})
	}
	found, work := PerDelivery(slots, analyzers.DefaultRules(), "example.com/api")
	if len(found) != 1 || found[0].OwnFrame != "example.com/api.(*Executor).sign" {
		t.Fatalf("findings %+v, work %+v", found, work)
	}
	in := false
	for _, w := range work {
		if w.Function == "example.com/api.(*Executor).Publish" && w.Calls == "" {
			in = w.Verdict == "in-library"
		}
	}
	if !in {
		t.Errorf("the library's fan-out: %+v", work)
	}
}

// Halves that differ (a loaded machine) but each of which alone falls to
// nothing without subscribers: per delivery, not noisy.
func TestPerDeliveryJudgesEachHalf(t *testing.T) {
	stacks := map[string][]string{"hash": {"crypto/sha256.block", "example.com/hub.authorise", "example.com/hub.publish"}}
	var slots []Slot
	for _, n := range []int{50, 90} {
		slots = append(slots, Slot{CPU: cpuProfile(stacks, map[string]int{"hash": n}), Subscribed: true, Events: 100, Deliveries: 1000},
			Slot{CPU: cpuProfile(stacks, map[string]int{}), Events: 100})
	}
	found, work := PerDelivery(slots, analyzers.DefaultRules(), "")
	if len(found) != 1 || len(work) == 0 || work[0].Verdict != "per-delivery" {
		t.Fatalf("findings %+v, work %+v", found, work)
	}
	// The same spread with the empty slots as busy as the quieter half:
	// that one tells nothing, and the halves disagree.
	slots[1].CPU, slots[3].CPU = cpuProfile(stacks, map[string]int{"hash": 45}), cpuProfile(stacks, map[string]int{"hash": 45})
	if found, work = PerDelivery(slots, analyzers.DefaultRules(), ""); len(found) != 0 || work[0].Verdict != "noisy" {
		t.Errorf("findings %+v, work %+v", found, work)
	}
}
