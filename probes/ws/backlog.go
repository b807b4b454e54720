package ws

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/probehq/probe/result"
)

// The hub's backlog: a server whose writers fall behind delivers a rooms
// slot's events after its profile has ended, in the next slot's, and an
// empty slot then bills the rooms' deliveries as work done without
// subscribers (under the race detector the test hub read 13,942 µs of
// encoding per event "without subscribers"). The readers count the rooms'
// markers; after each rooms slot probe waits for its deliveries before
// the next slot begins, and when too many arrived after its profile it
// runs the slot again with fewer events.

const (
	maxLate      = 0.15             // of a rooms slot's deliveries, arriving after its profile
	maxRetries   = 4                // rooms slots run again with fewer events
	backlogQuiet = time.Second      // no receipt for this long: the rest will not come
	backlogMax   = 15 * time.Second // the longest wait for a slot's deliveries
	backlogPoll  = 20 * time.Millisecond
)

// maxSlotRuns bounds the slot runs counted: the slots and their retries.
const maxSlotRuns = 16

// noteRooms counts the rooms' experiment events in msg by the slot run
// their marker names (pex-SLOT-…).
func (r *run) noteRooms(msg []byte) {
	for {
		i := bytes.Index(msg, roomsMark)
		if i < 0 {
			return
		}
		msg = msg[i+len(roomsMark):]
		seq, j := 0, 0
		for ; j < len(msg) && j < 3 && msg[j] >= '0' && msg[j] <= '9'; j++ {
			seq = 10*seq + int(msg[j]-'0')
		}
		if j > 0 && seq < maxSlotRuns {
			r.slotReceipts[seq].Add(1)
		}
	}
}

// awaitBacklog waits until slot run seq's deliveries received reach want
// or none arrives for backlogQuiet (the rest will not come): drained.
// After backlogMax with deliveries still arriving it gives up, not
// drained. It returns the deliveries received.
func (r *run) awaitBacklog(ctx context.Context, seq int, want int64) (int64, bool) {
	deadline := time.Now().Add(backlogMax)
	got := &r.slotReceipts[seq]
	last, lastAt := got.Load(), time.Now()
	for ctx.Err() == nil && time.Now().Before(deadline) {
		n := got.Load()
		switch {
		case n >= want:
			return n, true
		case n != last:
			last, lastAt = n, time.Now()
		case time.Since(lastAt) > backlogQuiet:
			return n, true
		}
		sleep(ctx, backlogPoll)
	}
	return got.Load(), ctx.Err() != nil
}

// lateShare is the part of s's received deliveries that arrived after its
// profile ended: 0 when none of its markers came back (a server that
// rewrites the events tells nothing of its backlog).
func lateShare(s *result.WSExperimentSlot) float64 {
	if s.Arrived+s.Late <= 0 {
		return 0
	}
	return float64(s.Late) / float64(s.Arrived+s.Late)
}

// fewerEvents is how many events a rooms slot may publish so that its
// deliveries arrive within its profile, from s, a slot that was late:
// its events scaled to the part of its deliveries that arrived in time
// (of those it meant: a hub that drops what its queues cannot hold
// keeps up with fewer still), less three tenths: a busy machine's writers
// keep up with less than they did.
func fewerEvents(s *result.WSExperimentSlot) int {
	inTime := float64(s.Arrived) / float64(max(s.Deliveries, s.Arrived+s.Late))
	return max(1, int(0.7*inTime*float64(s.Events)))
}

// lateVoid says why a rooms slot that was still late after the retries
// proves nothing.
func lateVoid(s *result.WSExperimentSlot, k int) string {
	return fmt.Sprintf("%.0f%% of slot %d's %d deliveries arrived after its 1 s profile ended, even at %d events a slot: "+
		"the hub's writers were still delivering them when the next slot began, and that slot's profile bills their "+
		"work to it, so nothing is concluded from it (fewer connections let the hub keep up)",
		100*lateShare(s), k+1, s.Arrived+s.Late, s.Events)
}

// undrainedVoid says why a rooms slot whose deliveries were still
// arriving backlogMax after it proves nothing.
func undrainedVoid(s *result.WSExperimentSlot, k int) string {
	return fmt.Sprintf("slot %d's deliveries were still arriving %s after its profile (%d of %d so far): the hub's writers "+
		"are that far behind, every later slot's profile would bill their work, so nothing is concluded from it "+
		"(fewer connections let the hub keep up)", k+1, backlogMax, s.Arrived+s.Late, s.Deliveries)
}
