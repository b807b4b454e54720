package grpc

import (
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/probes"
)

// A server stream is measured as a stream: the messages each call got (a
// range and its median, not one figure), and when the first stream does
// not end within WatchAfter — a watch, a subscription — the time to its
// first message and its messages per second, said at once.

// maxCountsKept bounds the distinct message counts a run keeps.
const maxCountsKept = 4096

// messageCounts are the messages of each checked call of a stream.
type messageCounts struct {
	mu    sync.Mutex
	calls map[int]int64 // messages → calls that got that many
	over  int64         // calls of counts not kept (past maxCountsKept distinct ones)
}

func (m *messageCounts) add(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calls == nil {
		m.calls = map[int]int64{}
	}
	if _, ok := m.calls[n]; !ok && len(m.calls) >= maxCountsKept {
		m.over++
		return
	}
	m.calls[n]++
}

// maxVerdictsKept bounds the stream replies whose verdicts are kept.
const maxVerdictsKept = 4096

// streamVerdicts are the checks of a stream's replies by their bytes and
// status: a stream's every call is counted, and the same bytes need not be
// decoded again (the client's own cache is per distinct reply only).
type streamVerdicts struct {
	mu   sync.Mutex
	seed maphash.Seed
	seen map[uint64]streamVerdict
}

type streamVerdict struct {
	n   int
	err error
}

func (v *streamVerdicts) key(r *probes.Reply) uint64 {
	var h maphash.Hash
	h.SetSeed(v.seed)
	for _, part := range []string{r.Header("Content-Type"), r.Header("Grpc-Status"), r.Header("Grpc-Message")} {
		h.WriteString(part)
		h.WriteByte(0)
	}
	h.Write(r.Body)
	return h.Sum64()
}

func (v *streamVerdicts) get(r *probes.Reply) (int, error, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seed, v.seen = maphash.MakeSeed(), map[uint64]streamVerdict{}
	}
	if r.Status != 200 {
		return 0, nil, false
	}
	got, ok := v.seen[v.key(r)]
	return got.n, got.err, ok
}

func (v *streamVerdicts) put(r *probes.Reply, n int, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if r.Status == 200 && len(v.seen) < maxVerdictsKept {
		v.seen[v.key(r)] = streamVerdict{n, err}
	}
}

// GRPCStream is what probe measured of a server-streaming method.
type GRPCStream struct {
	Method               string
	Calls                int64 // calls whose messages were counted
	Fewest, Median, Most int
	Messages             int64 // in all the counted calls
	// Watch: the first stream did not end within WatchAfter. Span is then
	// how long each call of the load holds the watch (its grpc-timeout).
	Watch           bool
	WatchAfter      time.Duration
	Span            time.Duration
	FirstMessage    time.Duration // the first stream's time to its first message; -1: none came
	FirstStreamMsgs int           // the messages the first stream got before probe let go of it
	// The load's spans' times to their first message (-1: none had one),
	// and the spans that got no message.
	SpanFirstMedian, SpanFirstSlowest time.Duration
	SpansWithoutMessage               int64
}

// MessagesPerSecond is a watch's: the messages a call got over its span
// (or, before any call, the first stream's over the time it was held).
func (s *GRPCStream) MessagesPerSecond() float64 {
	switch {
	case s.Calls > 0 && s.Span > 0:
		return float64(s.Messages) / (float64(s.Calls) * s.Span.Seconds())
	case s.WatchAfter > 0:
		return float64(s.FirstStreamMsgs) / s.WatchAfter.Seconds()
	}
	return 0
}

// WatchLine says that the method is a watch, and how it was measured.
func (s *GRPCStream) WatchLine() string {
	first := "no message came"
	if s.FirstMessage >= 0 {
		first = fmt.Sprintf("its first message after %v", s.FirstMessage.Round(time.Millisecond))
	}
	line := fmt.Sprintf("%s is a watch: its first stream had not ended after %v (%d messages, %s); "+
		"it is measured by messages per second (%.1f a stream) and time to first message, each call holding it for %v "+
		"on probe's gRPC client (letting go is the call's end, not an error), so a call's latency is that span, not the server's",
		s.Method, s.WatchAfter.Round(time.Millisecond), s.FirstStreamMsgs, first, s.MessagesPerSecond(), s.Span)
	if s.SpanFirstMedian >= 0 && s.Calls > 0 {
		line += fmt.Sprintf("; time to first message over %d calls: median %v, slowest %v", s.Calls,
			s.SpanFirstMedian.Round(time.Millisecond), s.SpanFirstSlowest.Round(time.Millisecond))
	}
	if s.SpansWithoutMessage > 0 {
		line += fmt.Sprintf("; %d calls got no message in their span", s.SpansWithoutMessage)
	}
	return line
}

// Stream is what the run measured of a server-streaming method; nil for a
// unary one.
func (l *GRPC) Stream() *GRPCStream {
	if !l.streaming {
		return nil
	}
	st := &GRPCStream{Method: strings.TrimPrefix(l.path, "/"), FirstMessage: -1, SpanFirstMedian: -1, SpanFirstSlowest: -1}
	if w := l.watch; w != nil {
		st.Watch, st.WatchAfter, st.Span, st.FirstMessage, st.FirstStreamMsgs = true, w.after, w.hold, w.first, w.msgs
		st.SpanFirstMedian, st.SpanFirstSlowest, st.SpansWithoutMessage = w.firstMessages()
	}
	l.counts.mu.Lock()
	defer l.counts.mu.Unlock()
	ns := make([]int, 0, len(l.counts.calls))
	for n, c := range l.counts.calls {
		ns = append(ns, n)
		st.Calls += c
		st.Messages += int64(n) * c
	}
	if st.Calls == 0 {
		return st
	}
	sort.Ints(ns)
	st.Fewest, st.Most = ns[0], ns[len(ns)-1]
	var seen int64
	for _, n := range ns { // the median call's count: the first whose calls pass half
		if seen += l.counts.calls[n]; 2*seen >= st.Calls {
			st.Median = n
			break
		}
	}
	return st
}

// watchStream is what the first stream of a watch showed, and how the
// load's calls hold it: each a span, on grpc-go's client.
type watchStream struct {
	after, hold time.Duration
	first       time.Duration // -1: no message
	msgs        int
	conn        *grpc.ClientConn
	md          metadata.MD
	method      string
	input       []*dynamicpb.Message // the request messages, as l.in
	output      protoreflect.MessageDescriptor
	maxBody     int

	mu     sync.Mutex
	firsts []time.Duration // each span's time to its first message (the first maxFirsts)
	none   int64           // spans that got no message
}

const maxFirsts = 100_000

// watchSpan is how long each call of a watch's load holds it: short beside
// WatchAfter (the run's --timeout or window), so that a call ends well
// within the timeout, and at most 5 s.
func watchSpan(after time.Duration) time.Duration {
	return max(min(after/4, 5*time.Second), min(500*time.Millisecond, after/2))
}

// span is a call of the watch with request message i: the watch opened,
// its messages read for the span (or until the reply reaches the run's
// --max-body), then let go of by probe — which is its end, not a failure;
// the reply is filled as the transport fills a gRPC reply, the messages
// as gRPC frames and the server's status, when it ended the stream, in
// the trailers' place.
func (w *watchStream) span(i int) func(resp *h1.Response) error {
	return func(resp *h1.Response) error {
		ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), w.md), w.hold)
		defer cancel()
		start := time.Now()
		first := time.Duration(-1)
		stream, err := w.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, w.method)
		if err == nil {
			err = stream.SendMsg(w.input[i])
		}
		if err == nil {
			err = stream.CloseSend()
		}
		var body []byte
		for err == nil && len(body) < w.maxBody {
			m := dynamicpb.NewMessage(w.output)
			if err = stream.RecvMsg(m); err != nil {
				break
			}
			if first < 0 {
				first = time.Since(start)
			}
			b, merr := proto.Marshal(m)
			if merr != nil {
				return merr
			}
			body = append(body, grpcFrame(b)...)
		}
		w.mu.Lock()
		if first < 0 {
			w.none++
		} else if len(w.firsts) < maxFirsts {
			w.firsts = append(w.firsts, first)
		}
		w.mu.Unlock()
		code, msg := "0", ""
		switch st := status.Convert(err); {
		case err == nil || err == io.EOF ||
			(st.Code() == codes.DeadlineExceeded || st.Code() == codes.Canceled) && (ctx.Err() != nil || time.Since(start) >= w.hold*9/10):
			// The server ended the stream well, or probe let go of it (its
			// client sends its deadline: the server may end it first, as
			// DEADLINE_EXCEEDED or as CANCELLED, grpc-go's health Watch does).
		case st.Code() == codes.Unavailable && len(body) == 0 && ctx.Err() == nil:
			return fmt.Errorf("%w: %s", h1.ErrClosed, textline.Of(st.Message(), textline.Max))
		default:
			code, msg = fmt.Sprint(int(st.Code())), url.PathEscape(st.Message())
		}
		resp.Fill(200, http.Header{"Content-Type": {"application/grpc"}, "Grpc-Status": {code}, "Grpc-Message": {msg}},
			body, len(body))
		return nil
	}
}

// firstMessages are the spans' times to their first message: the median
// and the slowest, and how many spans got none.
func (w *watchStream) firstMessages() (median, slowest time.Duration, none int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.firsts) == 0 {
		return -1, -1, w.none
	}
	d := slices.Clone(w.firsts)
	slices.Sort(d)
	return d[(len(d)-1)/2], d[len(d)-1], w.none
}

// firstStream calls the method once with the first request message
// (grpc-go's client) and reads its stream for up to WatchAfter. A stream
// that has not ended by then is a watch: said at once (Say), and the
// load's calls each hold it for a span. A stream that ends, however, is
// left to the load to judge.
func (l *GRPC) firstStream(ctx context.Context, t *probes.Target, maxBody int) error {
	if l.watch != nil {
		return nil // a later Prepare of the same load (a ramp's, the run's): known already
	}
	after := l.WatchAfter
	if after <= 0 {
		after = 10 * time.Second
	}
	conn, err := dial(t)
	if err != nil {
		return err
	}
	w := &watchStream{after: after, hold: watchSpan(after), first: -1, conn: conn, md: metadata.MD{},
		method: l.path, output: l.output, maxBody: maxBody}
	for _, m := range l.in {
		req := dynamicpb.NewMessage(l.input)
		if err := protojson.Unmarshal([]byte(m.key), req); err != nil {
			conn.Close()
			return err
		}
		w.input = append(w.input, req)
	}
	for _, h := range append(append([]h1.Field(nil), t.Header...), l.Header...) {
		if name := strings.ToLower(h.Name); name != "content-type" && name != "te" && name != "user-agent" {
			w.md.Append(name, h.Value)
		}
	}
	sctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(ctx, w.md), after)
	defer cancel()
	start := time.Now()
	stream, err := conn.NewStream(sctx, &grpc.StreamDesc{ServerStreams: true}, l.path)
	if err == nil {
		err = stream.SendMsg(w.input[0])
	}
	if err == nil {
		err = stream.CloseSend()
	}
	for err == nil {
		if err = stream.RecvMsg(dynamicpb.NewMessage(l.output)); err == nil {
			if w.msgs == 0 {
				w.first = time.Since(start)
			}
			w.msgs++
		}
	}
	// The server knows the deadline too (grpc-timeout) and may end the
	// stream at it first, as DEADLINE_EXCEEDED or CANCELLED.
	held := sctx.Err() != nil || time.Since(start) >= after*9/10
	if code := status.Code(err); ctx.Err() != nil || !held || code != codes.DeadlineExceeded && code != codes.Canceled {
		conn.Close()
		return ctx.Err() // it ended (well or not) within the time: the load judges its replies
	}
	l.watch = w // its connection is the load's, for the run
	if l.Say != nil {
		l.Say(textline.Of(l.Stream().WatchLine(), 1000))
	}
	return nil
}
