package ws_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/probes/ws"
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
// constant list once per event, much work, none of it per subscriber.
type fanout struct {
	kind  string
	mu    sync.Mutex
	rooms map[string]map[chan []byte]string // subscriber → its token
}

func serveFanout(kind string) {
	h := &fanout{kind: kind, rooms: map[string]map[chan []byte]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", h.serveWS)
	mux.HandleFunc("POST /publish", h.servePublish)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", l.Addr())
	http.Serve(l, mux)
}

func (h *fanout) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	room, ch := r.URL.Query().Get("room"), make(chan []byte, 4096)
	h.mu.Lock()
	if h.rooms[room] == nil {
		h.rooms[room] = map[chan []byte]string{}
	}
	h.rooms[room][ch] = r.URL.Query().Get("token")
	h.mu.Unlock()
	defer func() { h.mu.Lock(); delete(h.rooms[room], ch); h.mu.Unlock() }()
	ctx := c.CloseRead(r.Context())
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"ready"}`))
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-ch:
			if c.Write(ctx, websocket.MessageText, m) != nil {
				return
			}
		}
	}
}

func (h *fanout) servePublish(w http.ResponseWriter, r *http.Request) {
	var ev struct{ Room, Data string }
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if json.Unmarshal(body, &ev) != nil {
		http.Error(w, "bad event", http.StatusBadRequest)
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
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+kind)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the hub did not start: %v", err)
	}
	u, err := url.Parse(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return u, cmd.Process.Pid
}

// experiment runs a short fan-out with the experiment against a hub of
// kind and analyses its slots as the pipeline does.
func experiment(t *testing.T, kind string) (*ws.Result, []analyzers.Finding, []analyzers.DeliveryWork) {
	base, pid := startFanout(t, kind)
	o := ws.Options{Base: base, Path: "/ws?room={room}", Token: "t0k", Auth: "query", Ready: `"ready"`,
		Connections: 60, Rooms: 3, ConnectRate: 5000, Events: 5, Rounds: 1, Publish: "http", PublishPath: "/publish",
		PublishBody: `{"room":"{room}","data":"{event}"}`, DeliverTimeout: 5 * time.Second,
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
		t.Fatalf("%d slots, want %d", len(e.Slots), len(ws.ExperimentSlots))
	}
	var slots []analyzers.FanoutSlot
	for _, s := range e.Slots {
		if s.CPU == nil || s.Events == 0 {
			t.Fatalf("slot %+v: no profile or no events", s)
		}
		if want := s.Kind == "rooms"; want != (s.Deliveries > 0) {
			t.Errorf("slot %s: %d deliveries for %d events", s.Kind, s.Deliveries, s.Events)
		}
		slots = append(slots, analyzers.FanoutSlot{CPU: s.CPU, Subscribed: s.Kind == "rooms", Events: s.Events, Deliveries: s.Deliveries})
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
	if !slices.ContainsFunc(res.Timeline, func(s ws.Sample) bool { return s.Goroutines >= o.Connections }) {
		t.Error("the round's goroutine count is not in the timeline")
	}
	found, work := analyzers.PerDelivery(slots, analyzers.DefaultRules())
	for _, w := range work {
		t.Logf("%s → %s: %.1f µs/event (halves %.1f, %.1f), %.1f without subscribers, %d/%d samples, %.0f%%: %s",
			w.Function, w.Calls, w.PerEventUS, w.HalvesUS[0], w.HalvesUS[1], w.EmptyPerEventUS, w.Samples, w.EmptySamples, 100*w.Share, w.Verdict)
	}
	return res, found, work
}

func TestExperimentNamesWorkDoneOncePerSubscriber(t *testing.T) {
	t.Parallel()
	_, found, _ := experiment(t, "per-delivery")
	if len(found) == 0 {
		t.Fatal("no per-delivery finding for a hub that hashes the token for every subscriber of every event")
	}
	f := found[0]
	if f.Rule != analyzers.PerDeliveryRule || !strings.HasSuffix(f.OwnFrame, ".authorise") {
		t.Errorf("finding %s on %s, want %s on authorise: %s", f.Rule, f.OwnFrame, analyzers.PerDeliveryRule, f.Evidence)
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
	t.Parallel()
	_, found, work := experiment(t, "per-event")
	for _, f := range found {
		t.Errorf("claimed per delivery on a hub that does its work once per event: %s", f.Evidence)
	}
	// The trap's work was measured, and not found per delivery (per
	// event; a busy machine may leave its halves too far apart: noisy).
	i := slices.IndexFunc(work, func(w analyzers.DeliveryWork) bool { return strings.HasSuffix(w.Function, ".sortConstantList") })
	if i < 0 || work[i].Verdict != "per-event" && work[i].Verdict != "noisy" {
		t.Errorf("sortConstantList: %+v, want measured and per-event", work)
	}
}
