package ws

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/probehq/probe/result"

	"github.com/dustin/go-humanize"

	"github.com/probehq/probe/lib/textline"
)

// The per-delivery experiment holds only if the empty room's events reach
// no connection: a server that ignores the room as published (a publish
// path and body without {room}, a broadcast API) delivers them to every
// subscriber, and "CPU per event without subscribers" is then CPU per event
// with all of them. The readers look for the empty room's marker while the
// experiment runs; one receipt voids it, and nothing is concluded from it.

var emptyMark, roomsMark = []byte(emptyMarker), []byte(roomsMarker)

// noteExperiment counts the experiment's markers in msg, received by c
// while the experiment runs: the rooms' events (backlog.go) and the
// empty room's, which void it.
func (r *run) noteExperiment(c *conn, msg []byte) {
	if !r.experimenting.Load() {
		return
	}
	r.noteRooms(msg)
	n := bytes.Count(msg, emptyMark)
	if n == 0 {
		return
	}
	r.emptyReceipts.Add(int64(n))
	if c.sawEmpty.CompareAndSwap(false, true) {
		r.emptyConns.Add(1)
	}
}

// voided says whether the empty room's events have reached a connection,
// and if so marks e void, saying so.
func (r *run) voided(e *result.WSExperiment) bool {
	e.EmptyReceipts, e.EmptyConns = r.emptyReceipts.Load(), r.emptyConns.Load()
	if e.EmptyReceipts == 0 {
		return false
	}
	room, why := "a room no connection joined", "the server delivers events to connections of other rooms"
	if r.o.RoomlessPublish() {
		why = "neither --publish-path nor --publish-body holds {room}: every publish goes to the same place"
	} else if r.o.ExperimentRoom != "" {
		room = "the room --experiment-room names as without subscribers"
		why = "it has subscribers among them, or the server delivers it to other rooms"
	}
	e.Void = fmt.Sprintf("%s of the events to %s, %s, arrived at %s of the %s connections (%s): "+
		"events without subscribers had subscribers, so nothing is concluded from it",
		humanize.Comma(e.EmptyReceipts), textline.Of(e.EmptyRoom, 80), room, humanize.Comma(e.EmptyConns),
		humanize.Comma(int64(len(r.conns))), why)
	return true
}

// RoomlessPublish says whether neither the publish path nor its body holds
// {room}: every room is published the same event, so the rooms are one.
func (o *Options) RoomlessPublish() bool {
	return !strings.Contains(o.PublishPath, "{room}") && !strings.Contains(o.PublishBody, "{room}")
}
