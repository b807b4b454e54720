package ws

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/internal/testservers/pushhub"
	"github.com/probehq/probe/result"

	"github.com/coder/websocket"
)

// hub is a fan-out server for the tests: rooms by ?room=, a token by
// ?token=, POST /publish {"room","data"}, and one fault on purpose.
type hub struct {
	token string
	fault string // "", "drop", "dup", "misroute", "garbage"
	mu    sync.Mutex
	rooms map[string][]chan []byte
	n     atomic.Int64 // events published
}

func newHub(fault string) *hub {
	return &hub{token: "t0k", fault: fault, rooms: map[string][]chan []byte{}}
}

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/ws":
		if r.URL.Query().Get("token") != h.token {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		room := r.URL.Query().Get("room")
		if room == "pub" { // a publisher: each message is an event
			h.publisher(w, r)
			return
		}
		ch := make(chan []byte, 1024)
		h.mu.Lock()
		h.rooms[room] = append(h.rooms[room], ch)
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			subs := h.rooms[room]
			for i, s := range subs {
				if s == ch {
					h.rooms[room] = append(subs[:i:i], subs[i+1:]...)
				}
			}
			h.mu.Unlock()
		}()
		pushhub.Deliver(w, r, ch, pushhub.Text)
	case "/publish":
		ev, ok := pushhub.ReadPublished(w, r)
		if !ok {
			return
		}
		if n := h.fanOut(ev.Room, ev.Data); h.fault == "ack-fails" && n == 5 { // delivered, then refused
			http.Error(w, "publish failed", http.StatusInternalServerError)
		}
	default:
		http.NotFound(w, r)
	}
}

// publisher serves a publisher's connection: each message is an event.
func (h *hub) publisher(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	for {
		_, m, err := c.Read(r.Context())
		if err != nil {
			return
		}
		var ev struct{ Room, Data string }
		if json.Unmarshal(m, &ev) == nil {
			h.fanOut(ev.Room, ev.Data)
		}
	}
}

// fanOut sends an event to its room; the fifth goes wrong, at its room's
// first subscriber, as the fault says. It returns the event's number.
func (h *hub) fanOut(room, data string) int64 {
	msg, _ := json.Marshal(map[string]string{"room": room, "data": data})
	n := h.n.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fault == "broadcast" { // the room ignored: every event to every connection
		for _, subs := range h.rooms {
			for _, ch := range subs {
				ch <- msg
			}
		}
		return n
	}
	for i, ch := range h.rooms[room] {
		if n == 5 && i == 0 {
			switch h.fault {
			case "drop":
				continue
			case "dup":
				ch <- msg
			case "misroute":
				for other, subs := range h.rooms {
					if other != room && len(subs) > 0 {
						subs[0] <- msg
						break
					}
				}
			case "garbage":
				ch <- []byte("pev-x-1-2")
			}
		}
		ch <- msg
	}
	return n
}

func options(t *testing.T, srv *httptest.Server) Options {
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Base: u, Path: "/ws?room={room}", Token: "t0k", Auth: "query", Ready: `"ready"`,
		Connections: 40, Rooms: 4, ConnectRate: 2000, Events: 3, Rounds: 2, Pause: 10 * time.Millisecond,
		Publish: "http", PublishPath: "/publish", PublishBody: `{"room":"{room}","data":"{event}"}`,
		DeliverTimeout: 2 * time.Second}
}

func runHub(t *testing.T, fault string, edit func(*Options)) *result.WS {
	t.Helper()
	srv := httptest.NewServer(newHub(fault))
	defer srv.Close()
	o := options(t, srv)
	if edit != nil {
		edit(&o)
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCleanHubDeliversEveryEventOnce(t *testing.T) {
	res := runHub(t, "", nil)
	// 40 connections, 3 events per room per round, 2 rounds.
	want := result.WSCounts{Expected: 240, Delivered: 240}
	if res.Totals != want {
		t.Fatalf("totals %+v, want %+v", res.Totals, want)
	}
	if res.Failed() || res.Refused != 0 || res.ReadyCount != 40 {
		t.Fatalf("failed %v, refused %d, ready %d", res.Failed(), res.Refused, res.ReadyCount)
	}
	if len(res.Rounds) != 2 || res.Rounds[0].Counts.Delivered != 120 || res.Rounds[1].Latency.TotalCount() != 120 {
		t.Fatalf("rounds: %+v", res.Rounds)
	}
	for i, rc := range res.PerRoom {
		if rc.Expected != 60 || rc.Delivered != 60 {
			t.Errorf("room %d: %+v", i, rc)
		}
	}
}

func TestEachFaultIsCountedExactly(t *testing.T) {
	for _, tc := range []struct {
		fault string
		want  result.WSCounts
	}{
		{"drop", result.WSCounts{Expected: 240, Delivered: 239, Missing: 1}},
		{"dup", result.WSCounts{Expected: 240, Delivered: 240, Duplicated: 1}},
		{"misroute", result.WSCounts{Expected: 240, Delivered: 240, Misrouted: 1}},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			res := runHub(t, tc.fault, func(o *Options) { o.DeliverTimeout = 300 * time.Millisecond })
			if res.Totals != tc.want {
				t.Fatalf("totals %+v, want %+v", res.Totals, tc.want)
			}
			if !res.Failed() {
				t.Fatal("a run with a wrong delivery did not fail")
			}
		})
	}
}

// An event whose publish failed is expected by no one: when the server
// delivers it anyway, its receipts are counted apart, and neither
// deliveries nor latencies.
func TestAnEventWhosePublishFailedIsNoDelivery(t *testing.T) {
	res := runHub(t, "ack-fails", nil)
	// 40 connections in 4 rooms: the fifth event reaches its room's 10.
	want := result.WSCounts{Expected: 230, Delivered: 230}
	if res.Totals != want || res.Unacked != 10 || res.Latency.TotalCount() != 230 {
		t.Fatalf("totals %+v (want %+v), unacknowledged %d (want 10), latencies %d (want 230), wrong deliveries %v",
			res.Totals, want, res.Unacked, res.Latency.TotalCount(), res.Failed())
	}
	if errs := res.Rounds[0].PublishErrors + res.Rounds[1].PublishErrors; errs != 1 {
		t.Errorf("publish errors %d, want 1 (the report fails the run for it)", errs)
	}
}

func TestPublishedByWebSocketMessage(t *testing.T) {
	res := runHub(t, "", func(o *Options) {
		o.Publish, o.PublishPath = "ws", "/ws?room=pub&token=t0k"
	})
	if want := (result.WSCounts{Expected: 240, Delivered: 240}); res.Totals != want {
		t.Fatalf("totals %+v, want %+v", res.Totals, want)
	}
}

func TestBrokenMarkerIsGarbageNotADelivery(t *testing.T) {
	res := runHub(t, "garbage", nil)
	if res.Garbage != 1 || res.Failed() {
		t.Fatalf("garbage %d, failed %v, totals %+v", res.Garbage, res.Failed(), res.Totals)
	}
}

func TestDroppedConnectionsReconnectAndGetWhatFollows(t *testing.T) {
	res := runHub(t, "", func(o *Options) { o.Drop = 8; o.Rounds = 3 })
	if res.Dropped != 8 || res.Reconnected != 8 {
		t.Fatalf("dropped %d, reconnected %d", res.Dropped, res.Reconnected)
	}
	// Round 2 is published while 8 are away: 32 × 3 expected of it.
	if got := res.Rounds[1].Counts.Expected; got != 96 {
		t.Fatalf("round 2 expected %d, want 96", got)
	}
	if res.Failed() || res.Rounds[2].Counts.Delivered != 120 || res.Replayed != 0 || res.Lost != 0 {
		t.Fatalf("totals %+v, round 3 %+v, replayed %d, lost %d", res.Totals, res.Rounds[2].Counts, res.Replayed, res.Lost)
	}
}

func TestWrongTokenIsARefusalWithTheStatus(t *testing.T) {
	srv := httptest.NewServer(newHub(""))
	defer srv.Close()
	o := options(t, srv)
	o.Token = "wrong"
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "bad token") {
		t.Fatalf("err %v, want the refusal's status and body", err)
	}
}

func TestInterruptedRunKeepsWhatWasMeasured(t *testing.T) {
	srv := httptest.NewServer(newHub(""))
	defer srv.Close()
	o := options(t, srv)
	o.Rounds, o.Pause = 50, 100*time.Millisecond
	// Ctrl-C as the third round starts.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Progress = func(line string) {
		if strings.HasPrefix(line, "round 3 of") {
			cancel()
		}
	}
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || len(res.Rounds) < 2 || len(res.Rounds) > 3 || res.Failed() || res.Rounds[1].Counts.Delivered != 120 {
		t.Fatalf("interrupted %v, rounds %d, totals %+v", res.Interrupted, len(res.Rounds), res.Totals)
	}
}

func TestMarkerRoundTrips(t *testing.T) {
	m := Marker(12, 345, 6789*time.Microsecond)
	room, seq, sent, n, ok := parseMarker([]byte(strings.TrimPrefix(m, "pev-") + `"}`))
	if !ok || room != 12 || seq != 345 || time.Duration(sent) != 6789*time.Microsecond || n != len(m)-4 {
		t.Fatalf("%s: %d %d %d %d %v", m, room, seq, sent, n, ok)
	}
	for _, bad := range []string{"", "1-2", "1-2-", "a-1-2", "1--2-3"} {
		if _, _, _, _, ok := parseMarker([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}
