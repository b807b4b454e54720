package ws

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/probehq/probe/internal/slowtest"
	"github.com/probehq/probe/result"
)

// runExperiment runs a short fan-out with the experiment against the test
// hub with fault, the profiles its stand-in's (empty, at once).
func runExperiment(t *testing.T, fault string, edit func(*Options)) (*result.WS, *roomsHub) {
	t.Helper()
	h := newRoomsHub(t, fault)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	o := options(t, srv)
	o.Connections, o.Rooms, o.Rounds, o.Events = 12, 1, 1, 2
	o.Profile = &Profile{PprofURL: mustParse(t, srv.URL+"/debug/pprof/")}
	o.Experiment = true
	if edit != nil {
		edit(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Experiment == nil {
		t.Fatal("no experiment")
	}
	return res, h
}

// A server that ignores the room as published delivers the empty room's
// events to every connection: the experiment sees its markers arrive,
// voids itself at its first event (no slot is run) and says why.
func TestExperimentVoidsItselfWhenTheEmptyRoomReachesConnections(t *testing.T) {
	res, _ := runExperiment(t, "broadcast", func(o *Options) { o.PublishBody = `{"data":"{event}"}` })
	e := res.Experiment
	if e.Void == "" || e.EmptyReceipts != 12 || e.EmptyConns != 12 || len(e.Slots) != 0 {
		t.Fatalf("void %q, %d receipts at %d connections, %d slots", e.Void, e.EmptyReceipts, e.EmptyConns, len(e.Slots))
	}
	for _, w := range []string{"arrived at 12 of the 12 connections", "neither --publish-path nor --publish-body holds {room}",
		"nothing is concluded"} {
		if !strings.Contains(e.Void, w) {
			t.Errorf("void %q: want %q", e.Void, w)
		}
	}
	// The rounds' events are one room's: the run's checks hold.
	if res.Failed() || res.Totals.Delivered != 24 {
		t.Errorf("the rounds: %+v", res.Totals)
	}
}

// The same server with {room} in the body still ignores it: the void says
// the server delivers to other rooms' connections.
func TestExperimentVoidWithTheRoomPublished(t *testing.T) {
	res, _ := runExperiment(t, "broadcast", nil)
	if e := res.Experiment; !strings.Contains(e.Void, "the server delivers events to connections of other rooms") {
		t.Fatalf("void %q", e.Void)
	}
}

// --experiment-room: the empty room is the one named, the slots publish to
// it, and it may not be a room of the run.
func TestExperimentRoomNamed(t *testing.T) {
	slowtest.Measures(t)
	res, h := runExperiment(t, "", func(o *Options) { o.ExperimentRoom = "provisioned-idle" })
	e := res.Experiment
	if e.EmptyRoom != "provisioned-idle" || e.Void != "" || e.Skipped != "" || len(e.Slots) != len(ExperimentSlots) {
		t.Fatalf("experiment %+v", e)
	}
	h.mu.Lock()
	n := h.published["provisioned-idle"]
	h.mu.Unlock()
	if n == 0 {
		t.Errorf("no event published to the named room: %v", h.published)
	}
	o := Options{Base: mustParse(t, "http://127.0.0.1:1"), Path: "/ws", PublishPath: "/p", PublishBody: "{event}", Publish: "http",
		Auth: "none", Connections: 4, Rooms: 2, Events: 1, Rounds: 1, ConnectRate: 1, ExperimentRoom: "r1"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `--experiment-room "r1" is room 1 of the run`) {
		t.Errorf("the run's own room as the empty room: %v", err)
	}
}

func TestRoomlessPublish(t *testing.T) {
	for _, tc := range []struct {
		path, body string
		want       bool
	}{{"/publish", `{"data":"{event}"}`, true}, {"/publish/{room}", "{event}", false},
		{"/publish", `{"room":"{room}","data":"{event}"}`, false}} {
		o := Options{PublishPath: tc.path, PublishBody: tc.body}
		if got := o.RoomlessPublish(); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.path, tc.body, got, tc.want)
		}
	}
}

// An --experiment-room that has subscribers voids the experiment, named.
func TestExperimentRoomWithSubscribersVoids(t *testing.T) {
	res, _ := runExperiment(t, "broadcast", func(o *Options) { o.ExperimentRoom = "lobby" })
	if e := res.Experiment; !strings.Contains(e.Void, "to lobby, the room --experiment-room names as without subscribers, "+
		"arrived at 12 of the 12") ||
		!strings.Contains(e.Void, "it has subscribers among them") {
		t.Fatalf("void %q", e.Void)
	}
}
