// Package pushhub is a WebSocket push hub whose events are JSON documents
// (a feed's items), for probe ws's per-delivery experiment in tests, real
// code whose CPU profiles the analyzers read. Its modes:
//
//	PerSubscriber  each subscriber's writer encodes the event itself (wsjson.Write): the encode runs once per delivery
//	Once           the event is encoded once as it is published and the same bytes go to every subscriber
//	IgnoreRoom     as Once, but every event goes to every connection, whatever its room (a broadcast API)
//
// GET /ws?room=NAME subscribes and says {"type":"ready"}; POST /publish
// {"room","data"} publishes.
package pushhub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// The hub's modes.
const (
	PerSubscriber = "per-subscriber"
	Once          = "once"
	IgnoreRoom    = "ignore-room"
)

type event struct {
	Room  string           `json:"room"`
	Data  string           `json:"data"`
	Items []map[string]any `json:"items"`
	bytes []byte           // encoded once, when the mode does
}

// feed is every event's payload: maps of numbers, costly to encode for
// their size (sorted keys, floats), so that an encode once per event is
// measured beside the writes of its bytes.
var feed = func() []map[string]any {
	out := make([]map[string]any, 300)
	for i := range out {
		m := map[string]any{"id": i, "title": fmt.Sprintf("headline %d", i)}
		for k := range 12 {
			m[fmt.Sprintf("f%02d", k)] = float64(i*k) / 7
		}
		out[i] = m
	}
	return out
}()

// Hub is the push hub in one of its modes.
type Hub struct {
	mode  string
	mu    sync.Mutex
	rooms map[string]map[chan *event]bool
}

// New is a hub in mode (PerSubscriber, Once or IgnoreRoom).
func New(mode string) *Hub { return &Hub{mode: mode, rooms: map[string]map[chan *event]bool{}} }

// Routes serves the hub's /ws and POST /publish on mux.
func (h *Hub) Routes(mux *http.ServeMux) {
	mux.HandleFunc("/ws", h.serveWS)
	mux.HandleFunc("POST /publish", h.publish)
}

func (h *Hub) serveWS(w http.ResponseWriter, r *http.Request) {
	room, ch := r.URL.Query().Get("room"), make(chan *event, 4096)
	h.mu.Lock()
	if h.rooms[room] == nil {
		h.rooms[room] = map[chan *event]bool{}
	}
	h.rooms[room][ch] = true
	h.mu.Unlock()
	defer func() { h.mu.Lock(); delete(h.rooms[room], ch); h.mu.Unlock() }()
	Deliver(w, r, ch, write)
}

// write sends one event to one subscriber: its bytes, or the event
// encoded here, for this subscriber.
func write(ctx context.Context, c *websocket.Conn, ev *event) error {
	if ev.bytes != nil {
		return c.Write(ctx, websocket.MessageText, ev.bytes)
	}
	return wsjson.Write(ctx, c, ev)
}

func (h *Hub) publish(w http.ResponseWriter, r *http.Request) {
	in, ok := ReadPublished(w, r)
	if !ok {
		return
	}
	ev := &event{Room: in.Room, Data: in.Data, Items: feed}
	if h.mode != PerSubscriber {
		ev.bytes, _ = json.Marshal(ev)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for room, subs := range h.rooms {
		if room != in.Room && h.mode != IgnoreRoom {
			continue
		}
		for ch := range subs {
			select {
			case ch <- ev:
			default:
			}
		}
	}
}
