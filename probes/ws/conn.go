package ws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/probehq/probe/lib/textline"
)

// conn is one connection's receipts: counts and a bitset of its room's
// events, never the messages themselves.
type conn struct {
	i, room int

	mu        sync.Mutex
	ws        *websocket.Conn
	away      int      // the round it was dropped for; -1: none
	seen      []uint64 // its room's events received, by number
	maxSeq    int
	everReady bool
	dup       int64
	misrouted int64
	ooo       int64
	// By round, made on the first anomaly.
	dupRound, misRound, oooRound []int64
	// Receipts of events whose publish had no answer yet (a server often
	// fans out before it replies): timed once the answer is known.
	pending []pendingReceipt

	ready    atomic.Bool
	dead     atomic.Bool // closed by the server or the network
	dropping atomic.Bool // closed by probe (--drop): not lost
	sawEmpty atomic.Bool // received an event of the experiment's empty room
	readyCh  chan struct{}
	doneCh   chan struct{} // closed when its reader ends
}

func (c *conn) close() {
	c.mu.Lock()
	w := c.ws
	c.mu.Unlock()
	if w != nil {
		w.CloseNow()
	}
}

// bump adds one to a per-round count, making it on first use.
func bump(s *[]int64, round, rounds int) {
	if *s == nil {
		*s = make([]int64, rounds)
	}
	if round >= 0 && round < rounds {
		(*s)[round]++
	}
}

// openAll opens cs at the connect rate, at most 512 handshakes at once,
// and waits until each is ready or refused: how many the target refused
// (or left unready), the first refusal, and how many were not opened
// because the run was interrupted (no refusal of the target's).
func (r *run) openAll(ctx context.Context, cs []*conn) (int, string, int) {
	var refused, skipped atomic.Int32
	var first atomic.Value
	var readyN atomic.Int32
	sem := make(chan struct{}, 512)
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / r.o.ConnectRate)
	next := time.Now()
	stopProgress := make(chan struct{})
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				r.o.Progress(fmt.Sprintf("%d of %d connections ready", readyN.Load(), len(cs)))
			}
		}
	}()
	defer close(stopProgress)
	for _, c := range cs {
		if ctx.Err() != nil {
			skipped.Add(1)
			continue
		}
		if d := time.Until(next); d > 0 {
			sleep(ctx, d)
		}
		next = next.Add(interval)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := r.open(ctx, c); err != nil {
				if ctx.Err() != nil {
					skipped.Add(1) // cut short by the interruption, not refused
					return
				}
				refused.Add(1)
				first.CompareAndSwap(nil, err.Error())
				return
			}
			readyN.Add(1)
		})
	}
	wg.Wait()
	s, _ := first.Load().(string)
	return int(refused.Load()), s, int(skipped.Load())
}

// open upgrades c, authenticates and subscribes it, and waits for the
// server to say it is ready (Options.Ready).
func (r *run) open(ctx context.Context, c *conn) error {
	o := &r.o
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h := o.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if o.Auth == "header" && o.Token != "" {
		h.Set("Authorization", "Bearer "+o.Token)
	}
	w, resp, err := websocket.Dial(dctx, r.wsURL(c.room), &websocket.DialOptions{
		HTTPClient: r.clients[c.i%len(r.clients)], HTTPHeader: h})
	if err != nil {
		if resp != nil {
			var body []byte
			if resp.Body != nil {
				body, _ = io.ReadAll(io.LimitReader(resp.Body, 512))
			}
			return &RefusedError{Status: resp.StatusCode, Body: string(body), Err: err}
		}
		return &RefusedError{Err: err}
	}
	w.SetReadLimit(o.ReadLimit)
	c.mu.Lock()
	c.ws = w
	readyCh, doneCh := make(chan struct{}), make(chan struct{})
	c.readyCh, c.doneCh = readyCh, doneCh
	c.mu.Unlock()
	c.dropping.Store(false)
	c.dead.Store(false)
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		defer close(doneCh)
		r.read(c, w, readyCh)
	}()
	if o.Hello != "" {
		hello := fill(o.Hello, "{token}", o.Token, "{room}", o.roomName(c.room))
		if err := w.Write(dctx, websocket.MessageText, []byte(hello)); err != nil {
			w.CloseNow()
			return fmt.Errorf("the first message: %s", textline.Of(err.Error(), textline.Max))
		}
	}
	if o.Ready == "" {
		c.markReady()
		return nil
	}
	t := time.NewTimer(o.ReadyTimeout)
	defer t.Stop()
	select {
	case <-readyCh:
		return nil
	case <-doneCh:
		return errors.New("the server closed the connection before it was ready")
	case <-t.C:
		w.CloseNow()
		return fmt.Errorf("no %q from the server in %v", o.Ready, o.ReadyTimeout)
	case <-ctx.Done():
		w.CloseNow()
		return ctx.Err()
	}
}

func (c *conn) markReady() {
	c.mu.Lock()
	c.everReady = true
	c.mu.Unlock()
	c.ready.Store(true)
}

var marker = []byte("pev-")

// msgBufs are the readers' message buffers, shared: a reader holds one
// only while it reads and scans a message that has begun to arrive, so
// N idle connections cost no buffer and a delivery allocates nothing.
var msgBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// A buffer grown past this by a large message is dropped, not pooled.
const keptBuf = 64 << 10

// read is c's reader: every message is scanned for markers; memory is the
// message (at most ReadLimit) while it is scanned. It reads without a
// context (one that can end costs a registration on it per message, all
// readers on one lock); closing the connection ends it.
func (r *run) read(c *conn, w *websocket.Conn, readyCh chan struct{}) {
	readySent := r.o.Ready == ""
	ready := []byte(r.o.Ready)
	for {
		_, mr, err := w.Reader(context.Background())
		var msg []byte
		var bp *[]byte
		if err == nil {
			bp = msgBufs.Get().(*[]byte)
			msg, err = readAll(mr, (*bp)[:0])
		}
		if err != nil {
			if bp != nil {
				msgBufs.Put(bp)
			}
			if !r.stopping.Load() && !c.dropping.Load() {
				if brokeProtocol(err) { // garbage.go
					r.garbage.Add(1)
				}
				if c.ready.Load() {
					r.lost.Add(1)
				}
				c.dead.Store(true)
				c.ready.Store(false)
			}
			return
		}
		now := time.Since(r.start)
		if !readySent && bytes.Contains(msg, ready) {
			readySent = true
			c.markReady()
			close(readyCh)
		} else if c.ready.Load() && !bytes.Contains(msg, marker) {
			// After ready, a message without an event: the server's own (a
			// ping, a presence notice, a protocol's reply) or noise. Counted,
			// never garbage: a real server sends such messages.
			r.other.Add(1)
		}
		r.scan(c, msg, now)
		r.noteExperiment(c, msg)
		if cap(msg) <= keptBuf {
			*bp = msg[:0]
			msgBufs.Put(bp)
		}
	}
}

// readAll appends what r holds to buf, as io.ReadAll does, but into a
// buffer the caller reuses.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// scan counts every marker of msg, received at now.
func (r *run) scan(c *conn, msg []byte, now time.Duration) {
	for {
		k := bytes.Index(msg, marker)
		if k < 0 {
			return
		}
		msg = msg[k+len(marker):]
		room, seq, sent, n, ok := parseMarker(msg)
		msg = msg[n:]
		if !ok {
			r.garbage.Add(1)
			continue
		}
		r.receive(c, room, seq, now-time.Duration(sent))
	}
}

// receive checks one event's receipt on c.
func (r *run) receive(c *conn, room, seq int, lat time.Duration) {
	round := seq / r.o.Events
	rounds := len(r.rounds)
	if seq < 0 || seq >= r.perRoom || room < 0 || room >= r.o.Rooms {
		r.garbage.Add(1)
		return
	}
	c.mu.Lock()
	switch {
	case room != c.room:
		c.misrouted++
		bump(&c.misRound, round, rounds)
		c.mu.Unlock()
		return
	case get(c.seen, seq):
		c.dup++
		bump(&c.dupRound, round, rounds)
		c.mu.Unlock()
		return
	}
	set(c.seen, seq)
	if seq < c.maxSeq {
		c.ooo++
		bump(&c.oooRound, round, rounds)
	}
	c.maxSeq = max(c.maxSeq, seq)
	expected := round != c.away
	c.mu.Unlock()
	if !expected {
		return // a replay of what it missed while away
	}
	switch {
	case r.wasRefused(room, seq):
		r.unacked.Add(1) // its publish failed: no one's delivery
		return
	case !r.wasAccepted(room, seq):
		c.mu.Lock()
		c.pending = append(c.pending, pendingReceipt{seq: int32(seq), lat: lat})
		c.mu.Unlock()
		r.delivered.Add(1)
		return
	}
	r.delivered.Add(1)
	r.record(c, round, lat)
}

// pendingReceipt is an event received before its publish was answered.
type pendingReceipt struct {
	seq int32
	lat time.Duration
}

// settlePending times the receipts whose publish was accepted after they
// arrived and counts apart those whose publish failed; every publish has
// been answered by now.
func (r *run) settlePending() {
	for _, c := range r.conns {
		c.mu.Lock()
		pending := c.pending
		c.pending = nil
		c.mu.Unlock()
		for _, p := range pending {
			if r.wasRefused(c.room, int(p.seq)) {
				r.unacked.Add(1)
				continue
			}
			r.record(c, int(p.seq)/r.o.Events, p.lat)
		}
	}
}

// record adds one delivery's latency to its round's histogram.
func (r *run) record(c *conn, round int, lat time.Duration) {
	s := c.i % shards
	r.hdrMu[s].Lock()
	r.lat[round][s].RecordValue(max(1, lat.Microseconds()))
	r.hdrMu[s].Unlock()
}

// parseMarker reads ROOM-SEQ-SENT after "pev-": the numbers, how many
// bytes they took and whether they were whole. Digits are summed in place
// (strconv would make a string of each, three allocations a delivery).
func parseMarker(b []byte) (room, seq int, sent int64, n int, ok bool) {
	var nums [3]int64
	for k := range 3 {
		start := n
		var v int64
		over := false
		for n < len(b) && n-start < 19 && b[n] >= '0' && b[n] <= '9' {
			d := int64(b[n] - '0')
			over = over || v > (math.MaxInt64-d)/10 // ParseInt refuses it
			v = v*10 + d
			n++
		}
		if n == start || over {
			return 0, 0, 0, n, false
		}
		nums[k] = v
		if k < 2 {
			if n >= len(b) || b[n] != '-' {
				return 0, 0, 0, n, false
			}
			n++
		}
	}
	if nums[0] > 1<<30 || nums[1] > 1<<30 {
		return 0, 0, 0, n, false
	}
	return int(nums[0]), int(nums[1]), nums[2], n, true
}

// Marker is the identity of event seq of room, sent at offset since the
// run's start.
func Marker(room, seq int, sent time.Duration) string {
	return fmt.Sprintf("pev-%d-%d-%d", room, seq, sent.Nanoseconds())
}
