package probes

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/result"
)

// Client is one virtual client: one kept-alive connection and what it
// measured. Clients are not shared between goroutines; the engine merges
// their records at the end.
type Client struct {
	target    *Target
	conn      transport
	resp      h1.Response
	reply     Reply                    // reused: a Reply lives until the next call
	header    func(name string) string // c.resp.Header, bound once
	rec       *recorder
	measuring *atomic.Bool
	live      *liveCounters
	maxBody   int // a reply's bound, and of what is made of it (a gRPC reply's JSON)
	clock     monoClock
	cut       int // replies complete before their stream ended, whose stream probe cut (h1.Request.Watch)
}

// liveCounters feed the progress line.
type liveCounters struct{ requests, errors atomic.Int64 }

// recorder is one client's share of the Run, merged at the end.
type recorder struct {
	ops            map[string]*opRecord
	order          []string
	errors         *Reasons
	digests        map[string]*keyReplies
	checked        map[uint64]checked // reply digest → the check's verdict on those bytes
	samples        *samples           // decoded bodies by digest, for comparing replies (shared by the clients)
	acceptEncoding *string            // what the measured requests accepted
	wire           int64
	decoded        int64
	seed           maphash.Seed
	times          []result.RequestTime // with LoadOptions.RequestTimes, up to timesCap
	timesCap       int
	second         secondTally // the per-second series' current second
	// The last operation, request key and verdict looked up: a client
	// mostly sends the same request and gets the same bytes, and a map
	// lookup by a string a request was a share of probe's CPU.
	lastOp      *opRecord
	lastKey     string
	lastReplies *keyReplies
	lastSum     uint64
	lastChecked *checked
}

// keyReplies are one request key's replies: how often each digest came,
// and what the request was.
type keyReplies struct {
	op        string
	request   string      // method, path and body, bounded: to tell an echo of the input in a reply
	input     bool        // the request carries a query or a body
	bodyBytes int         // the request body's size
	headers   []string    // the input header fields the key's requests carry (InputHeaders)
	varied    []string    // those whose value differed between the key's requests
	first     *h1.Request // the key's first request, whose header values the others are compared with
	grpc      bool        // the key's requests are gRPC calls
	counts    map[uint64]int64
	// The last digest counted and how often since: counts has it after
	// flush.
	last  uint64
	lastN int64
}

// count adds one reply of digest sum.
func (k *keyReplies) count(sum uint64) {
	if k.lastN > 0 && sum == k.last {
		k.lastN++
		return
	}
	k.flush()
	k.last, k.lastN = sum, 1
}

// flush puts the last digest's count into counts.
func (k *keyReplies) flush() {
	if k.lastN > 0 {
		k.counts[k.last] += k.lastN
		k.lastN = 0
	}
}

type checked struct {
	err     error
	decoded int
}

func newClient(t *Target, timeout time.Duration, maxBody int, budget *h1.Budget, seed maphash.Seed, measuring *atomic.Bool,
	live *liveCounters, kept *samples) *Client {
	if maxBody <= 0 {
		maxBody = h1.DefaultMaxBody
	}
	c := &Client{
		target: t,
		conn:   newTransport(t, timeout, maxBody, budget),
		rec: &recorder{ops: map[string]*opRecord{}, errors: NewReasons(nil), digests: map[string]*keyReplies{},
			checked: map[uint64]checked{}, seed: seed, samples: kept}, // RunLoad gives second its run's series
		measuring: measuring, live: live, maxBody: maxBody, clock: monoClock{time.Now()},
	}
	c.header = c.resp.Header
	return c
}

// Target is the server this client loads.
func (c *Client) Target() *Target { return c.target }

// Unmeasured sends call now and checks its reply without recording it: a
// Prepare's calls.
func (c *Client) Unmeasured(call Call) (*Reply, error) {
	if err := c.conn.Do(call.Req, &c.resp); err != nil {
		return nil, err
	}
	return c.verify(call)
}

// Get fetches path, unmeasured, whatever its status: the status and the
// decoded body.
func (c *Client) Get(path string) (int, []byte, error) {
	reply, err := c.Unmeasured(Call{Op: "GET " + path, Req: c.target.Request("GET", path, nil), Check: func(*Reply) error { return nil }})
	if err != nil {
		return 0, nil, err
	}
	return reply.Status, bytes.Clone(reply.Body), nil
}

// MaxBody is a reply's bound, and of what is made of it (a gRPC reply's JSON).
func (c *Client) MaxBody() int { return c.maxBody }

// Do sends call now and records it when the window is open (or always, for
// set-up calls made from NewSession).
func (c *Client) Do(call Call) (*Reply, error) {
	return c.do(call, time.Time{}, true)
}

// do sends call; intended is when the open loop meant to send it (zero: now).
func (c *Client) do(call Call, intended time.Time, setup bool) (*Reply, error) {
	return c.doAt(call, intended, c.clock.now(), setup)
}

// doAt is do for a caller that has just read the clock: sent is now.
func (c *Client) doAt(call Call, intended, sent time.Time, setup bool) (*Reply, error) {
	if intended.IsZero() {
		intended = sent
	}
	var err error
	if call.Do != nil {
		err = call.Do(&c.resp)
	} else {
		err = c.conn.DoAt(sent, call.Req, &c.resp)
	}
	done := c.clock.now()
	if !c.resp.Done.IsZero() {
		// The reply was complete before its stream ended: an event
		// stream's result is its latency, not the stream's close.
		done = c.resp.Done
	}
	cut := c.resp.Cut
	var reply *Reply
	if err == nil {
		reply, err = c.verify(call)
	}
	if !setup && !c.measuring.Load() {
		return reply, err
	}
	if cut && !setup {
		c.cut++ // a measured request's stream, as the warning counts them
	}
	if err != nil && c.targetGone(err) {
		return reply, err // not a failed request: the run is ending with the target
	}
	op := c.rec.op(call.Op, setup)
	op.record(intended, sent, done)
	if !setup && len(c.rec.times) < c.rec.timesCap {
		c.rec.times = append(c.rec.times, result.RequestTime{Due: intended, Latency: done.Sub(intended), Failed: err != nil})
	}
	if !setup && c.rec.acceptEncoding == nil {
		ae := call.Req.HeaderValue("Accept-Encoding")
		c.rec.acceptEncoding = &ae
	}
	if !setup {
		c.live.requests.Add(1)
		c.rec.second.record(done, done.Sub(intended), err != nil)
	}
	if err != nil {
		op.Errors++
		of, reason := errorReason(call.Op, err)
		c.rec.errors.Add(of, reason, 1)
		if reason == "timeout" {
			if op.Timeouts == nil {
				op.Timeouts = result.NewHistogram()
			}
			op.Timeouts.RecordValue(max(1, done.Sub(sent).Microseconds()))
		}
		if !setup {
			c.live.errors.Add(1)
		}
	}
	return reply, err
}

// targetGone tells a refused connection to a target process that has died
// (the run ends on it) from a failed request.
func (c *Client) targetGone(err error) bool {
	if c.target.Child == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	if l := c.loop(); l != nil {
		// In a loop a wait on a channel would stop its other clients.
		for range 20 {
			select {
			case <-c.target.Child.Exited():
				return true
			default:
			}
			if !l.Sleep(10 * time.Millisecond) {
				break // the run was cancelled: by the target's exit, as likely as not
			}
		}
		select {
		case <-c.target.Child.Exited():
			return true
		default:
			return false
		}
	}
	select {
	case <-c.target.Child.Exited():
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

// loop is the event loop c's connection runs in, or nil (a goroutine's).
func (c *Client) loop() *h1.Loop {
	if t, ok := c.conn.(*h1Transport); ok {
		return t.Loop
	}
	return nil
}

// verify checks the reply. Bytes already checked for this operation are not
// decoded and parsed again: the same bytes get the same verdict, and the
// generator must not pay for what the target did not do.
func (c *Client) verify(call Call) (*Reply, error) {
	r := &c.resp
	encoding := r.Encoding()
	var h maphash.Hash
	h.SetSeed(c.rec.seed)
	h.WriteString(call.Op)
	h.WriteByte(0)
	h.Write(encoding)
	h.WriteByte(byte(r.Status >> 8))
	h.WriteByte(byte(r.Status))
	h.Write(r.Body)
	if c.target.HTTP2 != nil {
		// gRPC's verdict is in the trailers: a stream of no messages is
		// the same bytes whether it ended OK or UNAVAILABLE. The parts'
		// lengths are hashed too, so no body or status poses as another.
		ct, st, msg := r.Header("Content-Type"), r.Header("Grpc-Status"), r.Header("Grpc-Message")
		var n [12]byte
		binary.LittleEndian.PutUint32(n[:4], uint32(len(r.Body)))
		binary.LittleEndian.PutUint32(n[4:8], uint32(len(ct)))
		binary.LittleEndian.PutUint32(n[8:], uint32(len(st)))
		h.Write(n[:])
		h.WriteString(ct)
		h.WriteString(st)
		h.WriteString(msg)
	}
	sum := h.Sum64()
	if c.measuring.Load() {
		c.rec.wire += int64(r.WireBytes)
		d := c.rec.lastReplies
		if d == nil || c.rec.lastKey != call.Key {
			if d = c.rec.digests[call.Key]; d == nil {
				d = &keyReplies{op: call.Op, request: requestText(call.Req), input: hasInput(call.Req), bodyBytes: len(call.Req.Body),
					headers: InputHeaders(call.Req), first: call.Req, grpc: isGRPCRequest(call.Req), counts: map[uint64]int64{}}
				c.rec.digests[call.Key] = d
			}
			c.rec.lastKey, c.rec.lastReplies = call.Key, d
		}
		d.noteHeaders(call.Req)
		d.count(sum)
	}
	reply := &c.reply
	*reply = Reply{Status: r.Status, Header: c.header, Body: r.Body}
	if !call.Read {
		if v := c.rec.lastChecked; v != nil && c.rec.lastSum == sum {
			c.countDecoded(v.decoded)
			return reply, v.err
		}
		if v, ok := c.rec.checked[sum]; ok {
			c.rec.lastSum, c.rec.lastChecked = sum, &v
			c.countDecoded(v.decoded)
			return reply, v.err
		}
	}
	v := checked{decoded: len(r.Body)}
	if bytes.EqualFold(encoding, gzipName) {
		// Decoded within the same bound as received: a gzip bomb is this
		// request's error.
		zr, err := gzip.NewReader(bytes.NewReader(r.Body))
		if err == nil {
			reply.Body, err = c.conn.Decode(zr)
		}
		var tl *h1.TooLargeError
		var be *h1.BudgetError
		switch {
		case errors.As(err, &tl) || errors.As(err, &be):
			reply.Body, v.err = nil, err
		case err != nil:
			v.err = fmt.Errorf("gzip body does not decode: %v", err)
		}
		v.decoded = len(reply.Body)
	}
	if v.err == nil {
		c.rec.samples.keep(sum, reply.Body)
		v.err = checkReply(call, reply)
	}
	var be *h1.BudgetError
	if len(c.rec.checked) < 100_000 && !errors.As(v.err, &be) { // bounded; a budget refusal is of the moment, not of the bytes
		c.rec.checked[sum] = v
	}
	c.countDecoded(v.decoded)
	return reply, v.err
}

var gzipName = []byte("gzip")

func (c *Client) countDecoded(n int) {
	if c.measuring.Load() {
		c.rec.decoded += int64(n)
	}
}

func checkReply(call Call, r *Reply) error {
	if call.Check != nil {
		return call.Check(r)
	}
	if r.Status/100 != 2 {
		return fmt.Errorf("status %d", r.Status)
	}
	return nil
}

// opRecord is one client's record of an operation. A call sent when it
// was due (every call of the closed loop) has one figure, its latency and
// service time at once, recorded once in onTime: a histogram record is a
// cache miss in tables of a few hundred KB, and at 32 clients the second
// one was 4 % of probe's CPU. Latency and Service are made of them when
// the records are merged.
type opRecord struct {
	result.OpStats
	onTime histBatch
	// The calls sent after they were due (the open loop behind its
	// schedule), made on the first.
	lateLatency, lateService *hdrhistogram.Histogram
}

// record counts one call: its latency from when it was due (the open
// loop's correction for coordinated omission: a stalled server delays the
// sends behind it, and their wait counts) and its service time from when
// it was sent.
func (op *opRecord) record(intended, sent, done time.Time) {
	op.Calls++
	if intended.Equal(sent) {
		op.onTime.record(max(1, done.Sub(sent).Microseconds()))
		return
	}
	if op.lateLatency == nil {
		op.lateLatency, op.lateService = result.NewHistogram(), result.NewHistogram()
	}
	op.lateLatency.RecordValue(max(1, done.Sub(intended).Microseconds()))
	op.lateService.RecordValue(max(1, done.Sub(sent).Microseconds()))
}

// mergeTo adds op's calls to dst: its latencies and service times.
func (op *opRecord) mergeTo(dst *result.OpStats) {
	dst.Calls += op.Calls
	dst.Errors += op.Errors
	op.onTime.flush()
	dst.Latency.Merge(op.onTime.h)
	dst.Service.Merge(op.onTime.h)
	if op.lateLatency != nil {
		dst.Latency.Merge(op.lateLatency)
		dst.Service.Merge(op.lateService)
	}
}

func (r *recorder) op(name string, setup bool) *opRecord {
	if op := r.lastOp; op != nil && op.Name == name {
		return op
	}
	op, ok := r.ops[name]
	if !ok {
		op = &opRecord{OpStats: result.OpStats{Name: name, Setup: setup}, onTime: newHistBatch(result.NewHistogram())}
		r.ops[name] = op
		r.order = append(r.order, name)
	}
	r.lastOp = op
	return op
}

// errorReason names an error stably enough to be tallied.
// isDialError is a failure to connect (refused, unreachable, timed out):
// the request never reached the target.
func isDialError(err error) bool {
	if err == nil {
		return false // before errors.As, whose target escapes: an allocation a request
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// errorReason is the operation an error is tallied under ("" for the
// few reasons of none: a refused connection, a timeout) and its text
// (Reasons folds the request's own values out of it and cuts it).
func errorReason(op string, err error) (string, string) {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "", "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "", "connection reset"
	case errors.Is(err, h1.ErrClosed), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "", "connection closed by server"
	case errors.As(err, &ne) && ne.Timeout():
		return "", "timeout"
	}
	return op, err.Error()
}

// mergeInto adds the client's records to run: its errors to reasons,
// run.Errors's tally.
func (r *recorder) mergeInto(run *result.Run, index map[string]*result.OpStats, digests map[string]*keyReplies, reasons *Reasons) {
	r.second.flush() // into the run's series, shared
	for _, name := range r.order {
		src := r.ops[name]
		dst, ok := index[name]
		if !ok {
			dst = &result.OpStats{Name: name, Setup: src.Setup, Latency: result.NewHistogram(), Service: result.NewHistogram()}
			index[name] = dst
			run.Ops = append(run.Ops, dst)
		}
		src.mergeTo(dst)
		if src.Timeouts != nil {
			if dst.Timeouts == nil {
				dst.Timeouts = result.NewHistogram()
			}
			dst.Timeouts.Merge(src.Timeouts)
		}
	}
	reasons.AddAll(r.errors)
	for key, kr := range r.digests {
		d := digests[key]
		if d == nil {
			d = &keyReplies{op: kr.op, request: kr.request, input: kr.input, bodyBytes: kr.bodyBytes,
				headers: kr.headers, first: kr.first, grpc: kr.grpc, counts: map[uint64]int64{}}
			digests[key] = d
		}
		for _, n := range kr.varied {
			if !slices.Contains(d.varied, n) {
				d.varied = append(d.varied, n)
			}
		}
		d.noteHeaders(kr.first)
		kr.flush()
		for sum, n := range kr.counts {
			d.counts[sum] += n
		}
	}
	if r.acceptEncoding != nil {
		run.AcceptEncoding = *r.acceptEncoding
	}
	run.WireBytes += r.wire
	run.Decoded += r.decoded
	run.RequestTimes = append(run.RequestTimes, r.times...)
}
