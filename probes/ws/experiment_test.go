package ws_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/probehq/probe/analyzers"
	perdelivery "github.com/probehq/probe/analyzers/fanout"
	"github.com/probehq/probe/internal/slowtest"
	"github.com/probehq/probe/internal/testservers/pushhub"
	"github.com/probehq/probe/internal/testservers/selfserve"
	"github.com/probehq/probe/probes/ws"
	"github.com/probehq/probe/result"
)

// The experiment's servers run in a process of their own (this test
// binary, started again): a profile of the test's process would hold
// probe's readers, whose work is per delivery too.
const serveEnv = "PROBE_WS_EXPERIMENT_SERVE"

func TestMain(m *testing.M) {
	if kind := os.Getenv(serveEnv); kind != "" {
		serveFanout(kind)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fanout is a small hub: "per-delivery" authorises each event again for
// every subscriber (a hash of its token, the fixture's per-request
// mode); "per-event" (the trap) marshals each event once and sorts a
// constant list once per event, much work, none of it per subscriber;
// "backlog" authorises in each subscriber's writer, after the publish
// has returned, and waits 40 ms a write (a slow socket): the writers fall
// behind the publishes by as much as their queues of 64 hold (at 20 ms
// they kept up with the 32 events a slot the race detector lets probe
// publish, and no slot was late).
type fanout struct {
	kind  string
	mu    sync.Mutex
	rooms map[string]map[chan []byte]string // subscriber → its token
}

func serveFanout(kind string) {
	mux := http.NewServeMux()
	if strings.HasPrefix(kind, "encode-") {
		mode := pushhub.Once
		if kind == "encode-per-subscriber" {
			mode = pushhub.PerSubscriber
		}
		pushhub.New(mode).Routes(mux)
	} else {
		h := &fanout{kind: kind, rooms: map[string]map[chan []byte]string{}}
		mux.HandleFunc("/ws", h.serveWS)
		mux.HandleFunc("POST /publish", h.servePublish)
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	if err := selfserve.Serve(mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func (h *fanout) serveWS(w http.ResponseWriter, r *http.Request) {
	queue := 4096
	if h.kind == "backlog" {
		queue = 64
	}
	room, ch := r.URL.Query().Get("room"), make(chan []byte, queue)
	h.mu.Lock()
	if h.rooms[room] == nil {
		h.rooms[room] = map[chan []byte]string{}
	}
	h.rooms[room][ch] = r.URL.Query().Get("token")
	h.mu.Unlock()
	defer func() { h.mu.Lock(); delete(h.rooms[room], ch); h.mu.Unlock() }()
	write := pushhub.Text
	if h.kind == "backlog" {
		tok := r.URL.Query().Get("token")
		write = func(ctx context.Context, c *websocket.Conn, m []byte) error {
			time.Sleep(40 * time.Millisecond)
			if !authoriseSlowly(tok) {
				return nil
			}
			return pushhub.Text(ctx, c, m)
		}
	}
	pushhub.Deliver(w, r, ch, write)
}

func (h *fanout) servePublish(w http.ResponseWriter, r *http.Request) {
	ev, ok := pushhub.ReadPublished(w, r)
	if !ok {
		return
	}
	msg, _ := json.Marshal(map[string]string{"room": ev.Room, "data": ev.Data})
	if h.kind == "per-event" {
		sortConstantList()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch, tok := range h.rooms[ev.Room] {
		if h.kind == "per-delivery" && !authorise(tok) {
			continue
		}
		select {
		case ch <- msg:
		default:
		}
	}
}

// authorise is a password-style check of a token: turns of SHA-256.
func authorise(tok string) bool {
	sum := sha256.Sum256([]byte(tok))
	for range 1000 {
		sum = sha256.Sum256(sum[:])
	}
	return sum[0] != 0 || tok != ""
}

// authoriseSlowly is authorise 12 times: enough CPU a delivery for the
// experiment's samples at the deliveries a slow socket lets through.
func authoriseSlowly(tok string) bool {
	ok := true
	for range 12 {
		ok = authorise(tok) && ok
	}
	return ok
}

var constantList = func() []string {
	out := make([]string, 8000)
	for i := range out {
		out[i] = fmt.Sprintf("item-%07d", (i*7919)%8009)
	}
	return out
}()

// sortConstantList sorts the same list again: per-event work, the same
// with or without subscribers.
func sortConstantList() {
	s := slices.Clone(constantList)
	slices.Sort(s)
}

// startFanout starts a hub of kind in its own process: its URL and PID.
func startFanout(t *testing.T, kind string) (*url.URL, int) {
	t.Helper()
	u, cmd, _ := selfserve.Start(t, serveEnv+"="+kind)
	return u, cmd.Process.Pid
}

// experiment runs a short fan-out with the experiment against a hub of
// kind and analyses its slots as the pipeline does.
func experiment(t *testing.T, kind string) (*result.WS, []analyzers.Finding, []perdelivery.DeliveryWork) {
	return experimentOf(t, kind, 60)
}

// experimentOf is experiment with conns connections in 3 rooms.
func experimentOf(t *testing.T, kind string, conns int) (*result.WS, []analyzers.Finding, []perdelivery.DeliveryWork) {
	base, pid := startFanout(t, kind)
	o := ws.Options{Base: base, Path: "/ws?room={room}", Token: "t0k", Auth: "query", Ready: `"ready"`,
		Connections: conns, Rooms: 3, ConnectRate: 5000, Events: 5, Rounds: 1, Publish: "http", PublishPath: "/publish",
		PublishBody: `{"room":"{room}","data":"{event}"}`, DeliverTimeout: 5 * time.Second, ReadLimit: 1 << 20,
		Profile: &ws.Profile{PprofURL: base.JoinPath("/debug/pprof/")}, Experiment: true, PID: pid}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := ws.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	e := res.Experiment
	if e == nil || e.Skipped != "" {
		t.Fatalf("the experiment did not run: %+v", e)
	}
	if len(e.Slots) != len(ws.ExperimentSlots) {
		t.Fatalf("%d slots, want %d (void: %s)", len(e.Slots), len(ws.ExperimentSlots), e.Void)
	}
	var slots []perdelivery.Slot
	for _, s := range e.Slots {
		if s.CPU == nil || s.Events == 0 {
			t.Fatalf("slot %+v: no profile or no events", s)
		}
		if want := s.Kind == "rooms"; want != (s.Deliveries > 0) {
			t.Errorf("slot %s: %d deliveries for %d events", s.Kind, s.Deliveries, s.Events)
		}
		slots = append(slots, perdelivery.Slot{CPU: s.CPU, Subscribed: s.Kind == "rooms", Events: s.Events, Deliveries: s.Deliveries})
	}
	// The experiment's events carry no marker: the rounds' checks stay clean.
	if res.Failed() || res.Garbage != 0 {
		t.Errorf("the rounds' checks: %+v, %d garbage", res.Totals, res.Garbage)
	}
	// The server over time: a sample a second of its process, and its
	// goroutines as the round began (one a connection at least).
	if len(res.Timeline) < 5 {
		t.Errorf("%d timeline samples over a run of some 10s", len(res.Timeline))
	}
	for _, s := range res.Timeline {
		if s.RSSBytes == 0 || s.FDs == 0 || s.Threads == 0 {
			t.Errorf("timeline sample %+v: the process unread", s)
		}
	}
	if rd := res.Rounds[0]; rd.Goroutines < o.Connections || rd.ServerCPU <= 0 && res.ServerCPU <= 0 {
		t.Errorf("round 1: %d goroutines for %d connections, %v CPU", rd.Goroutines, o.Connections, rd.ServerCPU)
	}
	if !slices.ContainsFunc(res.Timeline, func(s result.WSSample) bool { return s.Goroutines >= o.Connections }) {
		t.Error("the round's goroutine count is not in the timeline")
	}
	found, work := perdelivery.PerDelivery(slots, analyzers.DefaultRules(), res.MainModule)
	for _, w := range work {
		t.Logf("%s → %s: %.1f µs/event (halves %.1f, %.1f), %.1f without subscribers, %d/%d samples, %.0f%%: %s",
			w.Function, w.Calls, w.PerEventUS, w.HalvesUS[0], w.HalvesUS[1], w.EmptyPerEventUS, w.Samples, w.EmptySamples, 100*w.Share, w.Verdict)
	}
	return res, found, work
}

func TestExperimentNamesWorkDoneOncePerSubscriber(t *testing.T) {
	slowtest.Measures(t)
	_, found, _ := experiment(t, "per-delivery")
	if len(found) == 0 {
		t.Fatal("no per-delivery finding for a hub that hashes the token for every subscriber of every event")
	}
	f := found[0]
	if f.Rule != perdelivery.PerDeliveryRule || !strings.HasSuffix(f.OwnFrame, ".authorise") {
		t.Errorf("finding %s on %s, want %s on authorise: %s", f.Rule, f.OwnFrame, perdelivery.PerDeliveryRule, f.Evidence)
	}
	if f.Class != "cacheable" || !strings.Contains(f.Evidence, "runs once for every subscriber of every event (20 deliveries per event)") ||
		!strings.Contains(f.Suggestion, "once per subscription") {
		t.Errorf("class %s, evidence %q, fix %q", f.Class, f.Evidence, f.Suggestion)
	}
	for _, g := range found {
		if strings.Contains(g.OwnFrame, "websocket") || strings.Contains(g.OwnFrame, "serveWS") {
			t.Errorf("the delivery itself claimed: %s", g.Evidence)
		}
	}
}

func TestExperimentClaimsNothingOfPerEventWork(t *testing.T) {
	slowtest.Measures(t)
	_, found, work := experiment(t, "per-event")
	for _, f := range found {
		t.Errorf("claimed per delivery on a hub that does its work once per event: %s", f.Evidence)
	}
	// The trap's work was measured, and not found per delivery (per
	// event; a busy machine may leave its halves too far apart: noisy).
	i := slices.IndexFunc(work, func(w perdelivery.DeliveryWork) bool { return strings.HasSuffix(w.Function, ".sortConstantList") })
	if i < 0 || work[i].Verdict != "per-event" && work[i].Verdict != "noisy" {
		t.Errorf("sortConstantList: %+v, want measured and per-event", work)
	}
}

// A hub whose writers fall behind its publishes: a rooms slot's
// deliveries would arrive in the next slot's profile, an empty one, and
// bill it the writers' hashing as work without subscribers. probe waits
// for each rooms slot's deliveries and runs a late slot again with fewer
// events: the kept slots are on time, and the writers' hashing is found
// per delivery, nothing of it without subscribers.
func TestExperimentWaitsForTheWritersBacklog(t *testing.T) {
	slowtest.Measures(t)
	res, found, work := experiment(t, "backlog")
	e := res.Experiment
	if e.Void != "" {
		t.Fatalf("void: %s", e.Void)
	}
	t.Logf("%d rooms slots run again", e.Retried)
	if e.Retried == 0 {
		t.Errorf("no rooms slot was run again on a hub seconds behind its publishes: %+v", e.Slots)
	}
	for k, s := range e.Slots {
		t.Logf("slot %d %s: %d events, %d deliveries, %d arrived, %d late", k+1, s.Kind, s.Events, s.Deliveries, s.Arrived, s.Late)
		if s.Kind == "rooms" && s.Late*100 > 15*(s.Arrived+s.Late) {
			t.Errorf("slot %d kept with %d of %d deliveries late", k+1, s.Late, s.Arrived+s.Late)
		}
	}
	for _, w := range work {
		if strings.HasSuffix(w.Function, "authorise") && w.Calls == "" && w.EmptyPerEventUS > 0.25*w.PerEventUS {
			t.Errorf("the writers' hashing spilled into the empty slots: %+v", w)
		}
	}
	if len(found) == 0 {
		t.Errorf("the writers' hashing per delivery was not found: %+v", work)
	}
}
