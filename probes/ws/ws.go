// Package ws is a WebSocket fan-out load (seed 004): N connections, each
// authenticated and subscribed to a room, events with identities
// published in rounds, and every connection's receipts checked: which
// events were missing, delivered twice, delivered to the wrong room or
// out of order, and how long each took from publish to receipt.
//
// An event's identity is a marker, pev-ROOM-SEQ-SENT (the room's index,
// the event's number within its room, the send time in nanoseconds since
// the run's start), that probe puts into whatever the server is asked to
// publish ({event} in the publish body). The server may wrap it as it
// likes; probe finds the markers in any message it receives.
package ws

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probehq/probe/result"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/textline"
)

// Options are one fan-out run.
type Options struct {
	// Base is the target's http:// URL; Path (with {room} and {token})
	// is where a connection upgrades, relative to it.
	Base *url.URL
	Path string
	// Header is sent with every upgrade and every HTTP publish.
	Header http.Header
	// Token authenticates a connection as Auth says: "header"
	// (Authorization: Bearer), "query" (token= added to Path unless it
	// has {token}), "message" (Hello is sent first), "none".
	Token string
	Auth  string
	// Hello is the first message of each connection ({token}, {room});
	// "" sends none.
	Hello string
	// Ready is a substring of the message that says a connection's
	// subscription is done; "" takes the upgrade (and Hello) for it.
	Ready string

	Connections int
	Rooms       int // connection i joins room i mod Rooms
	// RoomNames name the rooms ({room}), as many as Rooms; nil: r0, r1, …
	RoomNames   []string
	ConnectRate float64 // upgrades started a second
	Events      int     // events per room per round
	Rounds      int
	Pause       time.Duration // between rounds
	// Idle is a quiet wait before round IdleBefore (1-based; 0: the
	// middle round).
	Idle       time.Duration
	IdleBefore int
	// Drop closes this many connections abruptly before the middle
	// round, publishes it while they are away and reconnects them after.
	Drop int

	// Publish is "http" (POST PublishPath) or "ws" (a message on a
	// connection of its own to PublishPath); PublishBody is the body or
	// message, with {room} and {event}.
	// PublishMethod is the HTTP publish's method (default POST);
	// PublishPath may hold {room} and {event} there.
	Publish       string
	PublishPath   string
	PublishBody   string
	PublishMethod string

	DeliverTimeout time.Duration // how long after a round's last publish an event may still arrive
	ReadyTimeout   time.Duration // how long all connections may take to be ready
	ReadLimit      int64         // the largest message a connection reads
	SourceAddrs    int           // loopback source addresses to spread the connections over (127.0.0.1…)

	PID     int      // the target's process, for its memory and descriptors; 0: unseen
	Profile *Profile // nil: no profiles
	// Experiment, with Profile, publishes after the rounds to the rooms
	// and to a room no connection joined, a CPU profile each
	// (experiment.go): which work runs once per delivery.
	Experiment bool
	// ExperimentRoom is the experiment's empty room when the server's
	// rooms must be provisioned: a room the user guarantees has no
	// subscribers (probe still checks that none of its events arrive);
	// "": a fresh name of probe's.
	ExperimentRoom string
	// Progress is told what the run is doing; nil: nothing.
	Progress func(string)
	// OnReady is called once every connection is ready (or refused),
	// before the first round: a load to run alongside starts there.
	OnReady func()
}

// Profile is where and how the target is profiled while it fans out.
type Profile struct {
	PprofURL *url.URL // the target's /debug/pprof/ (trailing slash)
	// FgprofURL is the target's /debug/fgprof (--wall): a wall-clock
	// profile of each round; nil: none (fgprof walks every goroutine's
	// stack 100 times a second, a cost at 20,000 connections).
	FgprofURL  *url.URL
	MaxProfile int64
}

const shards = 16

// RefusedError is an upgrade the target refused: its status and the
// start of its body.
type RefusedError struct {
	Status int
	Body   string
	Err    error
}

func (e *RefusedError) Error() string {
	if re := redirect.As(e.Err); re != nil { // a redirect probe refused to follow
		return re.Error()
	}
	if e.Status == 0 {
		return "the WebSocket upgrade failed: " + textline.Of(fmt.Sprint(e.Err), textline.Max)
	}
	return fmt.Sprintf("the target refused the WebSocket upgrade: HTTP %d %q", e.Status, textline.Of(e.Body, 120))
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Validate checks o's numbers.
func (o *Options) Validate() error {
	switch {
	case o.Base == nil:
		return errors.New("no target")
	case o.Connections < 1 || o.Connections > 200_000:
		return fmt.Errorf("--connections %d: want 1 to 200,000", o.Connections)
	case o.Rooms < 1 || o.Rooms > o.Connections:
		return fmt.Errorf("--rooms %d: want 1 to --connections (%d)", o.Rooms, o.Connections)
	case o.Events < 1 || o.Events > 100_000:
		return fmt.Errorf("--events %d: want 1 to 100,000", o.Events)
	case o.Rounds < 1 || o.Rounds > 1000:
		return fmt.Errorf("--rounds %d: want 1 to 1,000", o.Rounds)
	case o.ConnectRate <= 0:
		return fmt.Errorf("--connect-rate %g: want more than 0", o.ConnectRate)
	case o.Drop < 0 || o.Drop > o.Connections:
		return fmt.Errorf("--drop %d: want 0 to --connections (%d)", o.Drop, o.Connections)
	case o.Drop > 0 && o.Rounds < 2:
		return fmt.Errorf("--drop needs --rounds 2 or more: a round while they are away, one after")
	case o.Pause < 0 || o.Idle < 0 || o.Pause > time.Hour || o.Idle > time.Hour:
		return fmt.Errorf("--pause and --idle: want 0 to 1h")
	case o.IdleBefore < 0 || o.IdleBefore > o.Rounds:
		return fmt.Errorf("the idle round %d: want 1 to --rounds (%d)", o.IdleBefore, o.Rounds)
	case o.Publish != "http" && o.Publish != "ws":
		return fmt.Errorf("--publish %q: want http or ws", o.Publish)
	case !strings.Contains(o.PublishBody, "{event}"):
		return fmt.Errorf("--publish-body %q: want {event} in it (the marker probe finds in what arrives)", o.PublishBody)
	case !strings.HasPrefix(o.Path, "/") || !strings.HasPrefix(o.PublishPath, "/"):
		return fmt.Errorf("--ws-path and --publish-path must start with /")
	}
	if err := o.checkPublish(); err != nil {
		return err
	}
	switch o.Auth {
	case "header", "query", "message", "none":
	default:
		return fmt.Errorf("--auth %q: want header, query, message or none", o.Auth)
	}
	if o.Auth == "message" && o.Hello == "" {
		return fmt.Errorf("--auth message needs --hello, the first message ({token}, {room})")
	}
	return nil
}

func (o *Options) defaults() {
	if o.DeliverTimeout <= 0 {
		o.DeliverTimeout = 10 * time.Second
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 2 * time.Minute
	}
	if o.ReadLimit <= 0 {
		o.ReadLimit = 64 << 10
	}
	if o.SourceAddrs <= 0 {
		o.SourceAddrs = 1
	}
	if o.IdleBefore == 0 {
		o.IdleBefore = o.Rounds/2 + 1
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
}

// addRounds makes the run's n rounds and their latency histograms.
func (r *run) addRounds(n int) {
	for i := range n {
		var lat [shards]*hdrhistogram.Histogram
		for s := range lat {
			lat[s] = newHist()
		}
		r.rounds = append(r.rounds, &result.WSRound{Round: i + 1})
		r.lat = append(r.lat, lat)
	}
}

// fill replaces the placeholders of a template.
func fill(t string, kv ...string) string { return strings.NewReplacer(kv...).Replace(t) }

// run is one fan-out run's state.
type run struct {
	o       Options
	start   time.Time
	conns   []*conn
	members [][]*conn // by room
	clients []*http.Client
	resMu   sync.Mutex // the result's files and warnings, written by the profile fetchers
	// refused is a bitset, room*perRoom+seq, of the events whose publish
	// failed (refused or timed out): one that arrives anyway is nobody's
	// delivery and no latency (a publish that timed out at 30 s and was
	// delivered later read as a p50 of minutes with nothing expected).
	refused    []atomic.Uint64
	accepted   []atomic.Uint64 // as refused, the events accepted
	unacked    atomic.Int64
	perRoom    int // events per room in the run
	rounds     []*result.WSRound
	lat        [][shards]*hdrhistogram.Histogram // by round: its deliveries' latencies, a shard a few connections
	current    atomic.Int32                      // the round being published (0-based)
	delivered  atomic.Int64                      // first receipts of expected events
	garbage    atomic.Int64
	other      atomic.Int64
	lost       atomic.Int32
	wsURL      func(room int) string
	hdrMu      [shards]sync.Mutex
	publishDur atomic.Int64
	readers    sync.WaitGroup
	stopping   atomic.Bool // the run is closing its connections: not lost
	// The per-delivery experiment is running: the readers count the empty
	// room's events they receive, and at how many connections (void.go),
	// and the rooms' events (backlog.go).
	experimenting atomic.Bool
	slotReceipts  [maxSlotRuns]atomic.Int64 // the rooms' events received, by slot run
	emptyReceipts atomic.Int64
	emptyConns    atomic.Int64
}

// Run opens the connections, publishes the rounds and checks every
// receipt. An error is a run that could not start (the first upgrade
// refused: *RefusedError); Ctrl-C (ctx) ends it early with what was
// measured, Interrupted set.
func Run(ctx context.Context, o Options) (*result.WS, error) {
	o.defaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	r := &run{o: o, perRoom: o.Events * o.Rounds}
	r.wsURL = r.upgradeURL()
	r.clients = loopbackClients(o.Base, o.SourceAddrs)
	r.makeEventSets()
	r.addRounds(o.Rounds)
	res := &result.WS{Connections: o.Connections, Rooms: o.Rooms, RoomNames: o.RoomNames, Raw: map[string][]byte{}}

	// The first upgrade alone: a target that refuses is one line, not
	// N refusals.
	r.start = time.Now()
	defer func() { // on every way out, no reader is left
		r.stopping.Store(true)
		for _, c := range r.conns {
			if c != nil {
				c.close()
			}
		}
	}()
	r.conns = make([]*conn, o.Connections)
	r.members = make([][]*conn, o.Rooms)
	for i := range r.conns {
		c := &conn{i: i, room: i % o.Rooms, away: -1, seen: make([]uint64, words(r.perRoom)), maxSeq: -1}
		r.conns[i] = c
		r.members[c.room] = append(r.members[c.room], c)
	}
	if err := r.open(ctx, r.conns[0]); err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			return nil, err
		}
		return nil, &RefusedError{Err: err}
	}

	sampler := startSampler(o.PID)
	defer sampler.stop()
	res.ServerRSSIdle = sampler.first()

	o.Progress(fmt.Sprintf("opening %d connections at %g/s", o.Connections, o.ConnectRate))
	refused, first, skipped := r.openAll(ctx, r.conns[1:])
	res.Ready = time.Since(r.start)
	res.Refused, res.FirstRefusal = refused, first
	res.ReadyCount = o.Connections - refused - skipped

	var mutex0, block0 *profile.Profile
	if o.Profile != nil {
		var err error
		if mutex0, _, err = fetch(ctx, o.Profile, "mutex", 0); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("no mutex profile: %v", err))
		}
		block0, _, _ = fetch(ctx, o.Profile, "block", 0)
	}

	if o.Profile != nil {
		res.MainModule = mainModule(ctx, o.Profile)
	}
	if o.OnReady != nil {
		o.OnReady()
	}
	dropAt := -1
	if o.Drop > 0 {
		dropAt = o.Rounds / 2
	}
	var pub publisher
	if err := pub.open(ctx, r); err != nil {
		return nil, err
	}
	defer pub.close()
	for i, rd := range r.rounds {
		if ctx.Err() != nil {
			break
		}
		if i+1 == o.IdleBefore && o.Idle > 0 {
			o.Progress(fmt.Sprintf("idle %v before round %d", o.Idle, i+1))
			rd.IdleBefore = o.Idle
			sleep(ctx, o.Idle)
		}
		var away []*conn
		if i == dropAt {
			away = r.drop(o.Drop, i)
			rd.Away = len(away)
			res.Dropped = len(away)
		}
		o.Progress(fmt.Sprintf("round %d of %d", i+1, o.Rounds))
		if o.Profile != nil {
			if n, err := goroutineCount(ctx, o.Profile); err == nil {
				rd.Goroutines = n
				sampler.goroutines(n)
			} else if i == 0 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("no goroutine count: %v", err))
			}
		}
		cpu0 := procCPU(o.PID)
		r.round(ctx, &pub, rd, i, res)
		if o.PID > 0 {
			rd.ServerCPU = procCPU(o.PID) - cpu0
		}
		if away != nil {
			o.Progress(fmt.Sprintf("reconnecting %d connections", len(away)))
			refused, first, skipped := r.openAll(ctx, away)
			res.Reconnected = len(away) - refused - skipped
			res.ReconnectRefused = refused
			if res.FirstRefusal == "" {
				res.FirstRefusal = first
			}
		}
		if i+1 < len(r.rounds) {
			sleep(ctx, o.Pause)
		}
	}
	res.Interrupted = ctx.Err() != nil
	// What the experiment's events do to the connections is not the
	// rounds': their counts are taken before it.
	lost, garbage, other := r.lost.Load(), r.garbage.Load(), r.other.Load()
	if o.Profile != nil && o.Experiment && ctx.Err() == nil {
		o.Progress("the per-delivery experiment")
		res.Experiment = r.experiment(ctx, &pub, res)
	}
	end := context.WithoutCancel(ctx)
	if o.Profile != nil {
		if last, raw, err := fetch(end, o.Profile, "mutex", 0); err == nil && mutex0 != nil {
			res.Mutex, _ = delta(last, mutex0)
			res.Raw["mutex.pb.gz"] = raw
		}
		if last, raw, err := fetch(end, o.Profile, "block", 0); err == nil && block0 != nil {
			res.Block, _ = delta(last, block0)
			res.Raw["block.pb.gz"] = raw
		}
	}
	if e := pub.redirected.Load(); e != nil {
		res.Warnings = append(res.Warnings, e.Error()+": each such publish failed, expected by no connection")
	}
	r.stopping.Store(true)
	for _, c := range r.conns {
		c.close()
	}
	r.readers.Wait()
	sampler.stop()
	res.ServerRSSPeak, res.ServerFDsPeak, res.OwnRSSPeak, res.ServerCPU = sampler.peaks()
	res.Timeline = sampler.samples()
	res.OwnCPU = ownCPU()
	res.Lost = int(lost)
	res.Garbage, res.Other = garbage, other
	res.PublishTime = time.Duration(r.publishDur.Load())
	r.settlePending()
	res.Unacked = r.unacked.Load()
	r.tally(res)
	return res, nil
}

// round publishes round i and waits until every expected event of it
// arrived or DeliverTimeout passed since its last publish.
func (r *run) round(ctx context.Context, pub *publisher, rd *result.WSRound, i int, res *result.WS) {
	began := time.Now()
	r.current.Store(int32(i))
	var cpu, wall chan *profile.Profile
	if r.o.Profile != nil {
		cpu = make(chan *profile.Profile, 1)
		secs := max(1, int(r.o.Pause.Round(time.Second)/time.Second))
		if r.o.Profile.FgprofURL != nil {
			wall = make(chan *profile.Profile, 1)
			go func() {
				p, raw, err := fetchWall(ctx, r.o.Profile, secs)
				r.resMu.Lock()
				if err == nil {
					res.Raw[fmt.Sprintf("wall-round-%02d.pb.gz", i+1)] = raw
				} else if i == 0 {
					res.Warnings = append(res.Warnings, fmt.Sprintf("no wall-clock profile (fgprof): %v", err))
				}
				r.resMu.Unlock()
				wall <- p
			}()
		}
		go func() {
			p, raw, err := fetch(ctx, r.o.Profile, "profile", secs)
			if err == nil {
				r.resMu.Lock()
				res.Raw[fmt.Sprintf("cpu-round-%02d.pb.gz", i+1)] = raw
				r.resMu.Unlock()
			}
			cpu <- p
		}()
	}
	// The deliveries this round should bring: its events times the
	// connections of each room that are ready and not away.
	var want int64
	for _, m := range r.members {
		for _, c := range m {
			c.mu.Lock()
			away := c.away == i
			c.mu.Unlock()
			if c.ready.Load() && !away && !c.dead.Load() {
				want += int64(r.o.Events)
			}
		}
	}
	before := r.delivered.Load()
	published, failed := pub.round(ctx, r, i)
	rd.Published, rd.PublishErrors = published, failed
	// A failed publish is expected by no one.
	want -= int64(failed) * int64(r.o.Connections/r.o.Rooms)
	// Interrupted, what was published still gets a second to arrive.
	deadline := time.Now().Add(r.o.DeliverTimeout)
	cut := false
	for r.delivered.Load()-before < want && time.Now().Before(deadline) {
		if ctx.Err() != nil && !cut {
			if soon := time.Now().Add(time.Second); soon.Before(deadline) {
				deadline = soon
			}
			cut = true
		}
		time.Sleep(5 * time.Millisecond)
	}
	if cpu != nil {
		select {
		case rd.CPU = <-cpu:
		case <-ctx.Done():
		}
	}
	if wall != nil {
		select {
		case rd.Wall = <-wall:
		case <-ctx.Done():
		}
	}
	rd.Took = time.Since(began)
}

// drop closes n connections spread over the rooms, abruptly (no close
// handshake), and marks them away for round i.
func (r *run) drop(n, i int) []*conn {
	var out []*conn
	step := max(1, len(r.conns)/n)
	for j := 0; j < len(r.conns) && len(out) < n; j += step {
		c := r.conns[j]
		if !c.ready.Load() || c.dead.Load() {
			continue
		}
		c.mu.Lock()
		c.away = i
		c.mu.Unlock()
		c.dropping.Store(true)
		c.close()
		c.ready.Store(false)
		out = append(out, c)
	}
	return out
}

// tally counts every connection's receipts into the rooms, the rounds
// and the run.
func (r *run) tally(res *result.WS) {
	res.PerRoom = make([]result.WSCounts, r.o.Rooms)
	for _, c := range r.conns {
		c.mu.Lock()
		room := &res.PerRoom[c.room]
		room.Duplicated += c.dup
		room.Misrouted += c.misrouted
		room.OutOfOrder += c.ooo
		for s := range c.dupRound {
			r.rounds[s].Counts.Duplicated += c.dupRound[s]
		}
		if c.everReady {
			for seq := 0; seq < r.perRoom; seq++ {
				i := seq / r.o.Events
				if !r.wasAccepted(c.room, seq) {
					continue // refused by the target, or not sent (interrupted)
				}
				got := get(c.seen, seq)
				if i == c.away {
					if got {
						res.Replayed++
					}
					continue
				}
				room.Expected++
				r.rounds[i].Counts.Expected++
				if got {
					room.Delivered++
					r.rounds[i].Counts.Delivered++
				} else {
					room.Missing++
					r.rounds[i].Counts.Missing++
				}
			}
		}
		for i, n := range c.misRound {
			r.rounds[i].Counts.Misrouted += n
		}
		for i, n := range c.oooRound {
			r.rounds[i].Counts.OutOfOrder += n
		}
		c.mu.Unlock()
	}
	for _, rc := range res.PerRoom {
		res.Totals.Add(rc)
	}
	res.Latency = newHist()
	for i, rd := range r.rounds {
		rd.Latency = newHist()
		for _, h := range r.lat[i] {
			rd.Latency.Merge(h)
		}
		res.Latency.Merge(rd.Latency)
		if rd.Published > 0 || rd.PublishErrors > 0 {
			res.Rounds = append(res.Rounds, rd)
		}
	}
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 10*60*1_000_000, 3) }

func words(bits int) int         { return (bits + 63) / 64 }
func get(b []uint64, i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func set(b []uint64, i int)      { b[i/64] |= 1 << (i % 64) }

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// upgradeURL is where connection i upgrades: Path with its room and the
// token filled in.
func (r *run) upgradeURL() func(room int) string {
	base := *r.o.Base
	base.Scheme = strings.Replace(base.Scheme, "http", "ws", 1)
	path := r.o.Path
	if r.o.Auth == "query" && !strings.Contains(path, "{token}") {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "token={token}"
	}
	prefix := strings.TrimSuffix(base.String(), "/")
	token := url.QueryEscape(r.o.Token)
	return func(room int) string {
		return prefix + fill(path, "{room}", url.QueryEscape(r.o.roomName(room)), "{token}", token)
	}
}

// loopbackClients are HTTP clients for the upgrades, each dialling from
// its own loopback source address when the target is on 127.0.0.0/8, so
// that many connections do not run out of one address's ephemeral ports.
func loopbackClients(base *url.URL, n int) []*http.Client {
	ip := net.ParseIP(base.Hostname())
	if ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		n = 1
	}
	var out []*http.Client
	for k := range n {
		d := &net.Dialer{Timeout: 10 * time.Second}
		if n > 1 {
			d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+k))}
		}
		tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64, ForceAttemptHTTP2: false}
		// An upgrade answered 3xx is refused, not followed to where the
		// server points with the headers and the token (lib/redirect).
		out = append(out, &http.Client{Transport: tr, Timeout: 0, CheckRedirect: redirect.Refuse("the WebSocket upgrade")})
	}
	return out
}
