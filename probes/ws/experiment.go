package ws

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probehq/probe/result"

	"github.com/probehq/probe/lib/textline"
)

// The per-delivery experiment: a CPU profile cannot tell work done once
// per event from work done once per subscriber of it. After the rounds,
// probe publishes events in slots of a CPU profile each, in turn to the
// rooms as the rounds did ("rooms") and to a room no connection joined
// ("empty"): work whose CPU per event stays put without subscribers is
// per-event; work whose CPU per event falls to near nothing is done per
// delivery. The analysis is analyzers/fanout.PerDelivery.

// ExperimentSlots is the order of the slots: the two kinds in Thue–Morse
// order, so that a drift of the machine's speed over the experiment
// weighs on both alike; the rooms' slots split into two halves (odd and
// even) that are the control.
var ExperimentSlots = []string{"rooms", "empty", "empty", "rooms", "empty", "rooms", "rooms", "empty"}

const (
	slotSeconds  = 1                      // each slot's CPU profile
	slotLead     = 100 * time.Millisecond // the profile starts before the events
	slotPublish  = 650 * time.Millisecond // events are sent for this long…
	slotDrain    = slotSeconds*time.Second - slotLead - slotPublish
	emptyRoomFmt = "probe-experiment-%d" // a room no connection joined
	// emptyWait is how long after the empty room's first event probe
	// waits for it to arrive anywhere before the slots begin.
	emptyWait = 500 * time.Millisecond
)

// The experiment's events carry markers of their own, never pev- (the
// rounds' checks do not see them): roomsMarker in the events to the
// rooms, emptyMarker in the empty room's, which no connection may get.
const (
	roomsMarker = "pex-"
	emptyMarker = "pexnone-"
)

// experiment runs the slots; nil when there is nothing to publish to.
func (r *run) experiment(ctx context.Context, pub *publisher, res *result.WS) *result.WSExperiment {
	e := &result.WSExperiment{EmptyRoom: r.emptyRoom(time.Now().UnixNano())}
	// The readers look for the empty room's markers from now on: one
	// that arrives anywhere voids the experiment (void.go).
	r.experimenting.Store(true)
	defer r.experimenting.Store(false)
	// The subscribers of each room now: what one event to it delivers.
	subs := make([]int64, r.o.Rooms)
	for room, m := range r.members {
		for _, c := range m {
			if c.ready.Load() && !c.dead.Load() {
				subs[room]++
			}
		}
	}
	// The empty room first, once: a server that refuses it skips the
	// experiment, with a note.
	if err := pub.sendTo(ctx, r, 0, e.EmptyRoom, 0, 0, true); err != nil {
		e.Skipped = fmt.Sprintf("the target refused an event to a room no connection joined (%s): %s", e.EmptyRoom,
			textline.Of(err.Error(), textline.Max))
		return e
	}
	// A server that delivers the empty room's event anyway (it ignores
	// the room as published) shows it at once: no slot is run for nothing.
	sleep(ctx, emptyWait)
	if r.voided(e) {
		return e
	}
	var roomEvents, roomSlots, roomsLimit, retries int
	for k := 0; k < len(ExperimentSlots); k++ {
		seq := k + retries // this slot's run, in its events' markers
		kind := ExperimentSlots[k]
		if ctx.Err() != nil {
			e.Skipped = "interrupted"
			return e
		}
		slot := &result.WSExperimentSlot{Kind: kind}
		cpu := make(chan error, 1)
		go func() {
			p, raw, err := fetch(ctx, r.o.Profile, "profile", slotSeconds)
			if err == nil {
				slot.CPU = p
				r.resMu.Lock()
				res.Raw[fmt.Sprintf("cpu-experiment-%02d-%s.pb.gz", k+1, kind)] = raw
				r.resMu.Unlock()
			}
			cpu <- err
		}()
		sleep(ctx, slotLead)
		// The empty room gets as many events as a slot of the rooms did:
		// the same work per event, without its deliveries.
		limit := roomsLimit
		if kind == "empty" && roomSlots > 0 {
			limit = max(1, roomEvents/roomSlots)
		}
		r.burst(ctx, pub, slot, e.EmptyRoom, subs, seq, limit)
		sleep(ctx, slotDrain)
		if err := <-cpu; err != nil {
			e.Skipped = fmt.Sprintf("the CPU profile of slot %d: %s", k+1, textline.Of(err.Error(), textline.Max))
			return e
		}
		if kind == "rooms" {
			// Its deliveries arrive before the next slot begins (backlog.go).
			slot.Arrived = r.slotReceipts[seq].Load()
			received, drained := r.awaitBacklog(ctx, seq, slot.Deliveries)
			slot.Late = received - slot.Arrived
			if !drained {
				e.Slots = append(e.Slots, slot)
				e.Void = undrainedVoid(slot, k)
				return e
			}
			if lateShare(slot) > maxLate {
				roomsLimit = fewerEvents(slot)
				if retries < maxRetries {
					retries++
					e.Retried++
					k-- // the slot again, with fewer events
					continue
				}
				e.Slots = append(e.Slots, slot)
				e.Void = lateVoid(slot, k)
				return e
			}
			roomEvents += slot.Events
			roomSlots++
		}
		e.Slots = append(e.Slots, slot)
		if r.voided(e) {
			return e
		}
	}
	return e
}

// emptyRoom is a room no connection joined: --experiment-room when given
// (the user's word that it has no subscribers), else probe-experiment-N,
// N from seed, another N while the name is one of the target file's
// rooms (r0, r1, … never are).
func (r *run) emptyRoom(seed int64) string {
	if r.o.ExperimentRoom != "" {
		return r.o.ExperimentRoom
	}
	n := seed % 1_000_000
	for {
		name := fmt.Sprintf(emptyRoomFmt, n)
		if !slices.Contains(r.o.RoomNames, name) {
			return name
		}
		n = (n + 1) % 1_000_000
	}
}

// burst publishes for slotPublish on the publisher's workers: to every
// room in turn (kind "rooms") or to the empty room; at most limit events
// (0: no limit).
func (r *run) burst(ctx context.Context, pub *publisher, slot *result.WSExperimentSlot, empty string, subs []int64, seq, limit int) {
	var events, failed, deliveries, taken atomic.Int64
	stop := time.Now().Add(slotPublish)
	var wg sync.WaitGroup
	for w := range pub.workers {
		wg.Go(func() {
			for n := 0; time.Now().Before(stop) && ctx.Err() == nil; n++ {
				if limit > 0 && taken.Add(1) > int64(limit) {
					return
				}
				room, name := -1, empty
				if slot.Kind == "rooms" {
					room = (w + n*pub.workers) % r.o.Rooms
					name = r.o.roomName(room) // the file's name, as the rounds and the connections have it
				}
				if err := pub.sendTo(ctx, r, w, name, seq, w*1_000_000+n, room < 0); err != nil {
					failed.Add(1)
					continue
				}
				events.Add(1)
				if room >= 0 {
					deliveries.Add(subs[room])
				}
			}
		})
	}
	wg.Wait()
	slot.Events, slot.Failed, slot.Deliveries = int(events.Load()), int(failed.Load()), deliveries.Load()
}

// sendTo publishes one experiment event to room: no event marker in it
// (the connections expect none of these), the empty room's marker in the
// empty room's (empty), the same size as a round's: pex-SLOT-N-SENT, the
// slot's run seq first, so that the readers count each run's deliveries.
func (p *publisher) sendTo(ctx context.Context, r *run, w int, room string, seq, n int, empty bool) error {
	mark := roomsMarker
	if empty {
		mark = emptyMarker
	}
	id := fmt.Sprintf("%s%d-%d-%d", mark, seq, n, time.Since(r.start).Nanoseconds())
	path := fill(r.o.PublishPath, "{room}", url.PathEscape(room), "{event}", id)
	return p.send(ctx, r, w, path, fill(r.o.PublishBody, "{room}", room, "{event}", id))
}
