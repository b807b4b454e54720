package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/internal/slowtest"
)

// roomsHub is the test hub with a ledger: which rooms the experiment's
// events (pex-…, no marker) were published to, and a stand-in for
// /debug/pprof that answers at once with an empty CPU profile.
type roomsHub struct {
	*hub
	mu        sync.Mutex
	published map[string]int // room → experiment events
	cpu       []byte
}

func newRoomsHub(t *testing.T, fault string) *roomsHub {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return &roomsHub{hub: newHub(fault), published: map[string]int{}, cpu: b.Bytes()}
}

func (h *roomsHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/debug/pprof/goroutine":
		io.WriteString(w, "goroutine profile: total 50\n")
	case strings.HasPrefix(r.URL.Path, "/debug/pprof/"):
		w.Write(h.cpu)
	case r.URL.Path == "/publish":
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		var ev struct{ Room, Data string }
		if json.Unmarshal(body, &ev) == nil && strings.HasPrefix(ev.Data, "pex") {
			h.mu.Lock()
			h.published[ev.Room]++
			h.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.hub.ServeHTTP(w, r)
	default:
		h.hub.ServeHTTP(w, r)
	}
}

// TestExperimentPublishesToTheNamedRooms: with the target file's room
// names, the experiment's "rooms" slots publish to those rooms (the ones
// the connections joined), its "empty" slots to a room no connection
// joined, and nothing to r0, r1, … (rooms of no one): the contrast is
// subscribers against none, not an empty room against another.
func TestExperimentPublishesToTheNamedRooms(t *testing.T) {
	slowtest.Measures(t)
	h := newRoomsHub(t, "")
	srv := httptest.NewServer(h)
	defer srv.Close()
	o := options(t, srv)
	o.Connections, o.Rooms, o.RoomNames = 12, 2, []string{"lobby", "news:eu"}
	o.Rounds, o.Events = 1, 2
	o.Profile = &Profile{PprofURL: mustParse(t, srv.URL+"/debug/pprof/")}
	o.Experiment = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	e := res.Experiment
	if e == nil || e.Skipped != "" || len(e.Slots) != len(ExperimentSlots) {
		t.Fatalf("the experiment did not run: %+v", e)
	}
	if res.Failed() || res.Totals.Expected != 24 {
		t.Errorf("the rounds: %+v", res.Totals)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var rooms []string
	for room := range h.published {
		rooms = append(rooms, room)
	}
	slices.Sort(rooms)
	want := []string{e.EmptyRoom, "lobby", "news:eu"}
	slices.Sort(want)
	if !slices.Equal(rooms, want) {
		t.Fatalf("experiment events went to %v (%v), want the named rooms and the empty one %v", rooms, h.published, want)
	}
	if slices.Contains(o.RoomNames, e.EmptyRoom) || !strings.HasPrefix(e.EmptyRoom, "probe-experiment-") {
		t.Errorf("empty room %q", e.EmptyRoom)
	}
	if e.Void != "" || e.EmptyReceipts != 0 {
		t.Errorf("a hub that delivers by room voided the experiment: %s (%d receipts)", e.Void, e.EmptyReceipts)
	}
	// Each "rooms" slot's deliveries are its events times the room's
	// subscribers (6 each), as the connections in the named rooms received.
	for _, s := range e.Slots {
		switch {
		case s.Events == 0:
			t.Errorf("slot %s: no events", s.Kind)
		case s.Kind == "rooms" && s.Deliveries != 6*int64(s.Events):
			t.Errorf("slot rooms: %d deliveries for %d events, want 6 each", s.Deliveries, s.Events)
		case s.Kind == "empty" && s.Deliveries != 0:
			t.Errorf("slot empty: %d deliveries", s.Deliveries)
		}
	}
	var toRooms int
	for _, s := range e.Slots {
		if s.Kind == "rooms" {
			toRooms += s.Events
		}
	}
	if got := h.published["lobby"] + h.published["news:eu"]; got != toRooms {
		t.Errorf("the hub got %d events to the named rooms, the slots say %d", got, toRooms)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
