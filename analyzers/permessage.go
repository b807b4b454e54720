package analyzers

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/probehq/probe/lib/frames"
)

// Work done for each message a stream sends is per message: a loop that
// sends a message each turn, or a callback that sends one each time it is
// called, grows with the messages a call sends, not with the data the
// server holds. Its map checks and encodes are no scan, and indexing the
// data by the request's key would not remove them.

// streamSend are the frames by which a server sends one message on a
// stream: the protocol library's send, which every generated stub and
// generic stream calls.
var streamSend = regexp.MustCompile(`^(google\.golang\.org/grpc\.\(\*serverStream\)\.SendMsg|` +
	`google\.golang\.org/grpc\.\(\*GenericServerStream\[.*\]\)\.Send|` +
	`connectrpc\.com/connect\.\(\*ServerStream\[.*\]\)\.Send(Msg)?)$`)

// generatedFile is code written by protoc's plugins: a stub that sends is
// the protocol's, not the target's loop.
func generatedFile(file string) bool {
	return strings.HasSuffix(file, ".pb.go") || strings.HasSuffix(file, ".connect.go")
}

func init() {
	detectors["per-message"] = detector{run: perMessage}
}

// sendLoop is the target's own function that sends a stream's messages
// and does work of its own besides (fn, "" when the profile shows none):
// a callback, called by the target's own code once per message, or the
// handler whose loop sends.
type sendLoop struct {
	fn       string
	callback bool             // called by the target's own code: all of its work is per message
	sends    map[string]int64 // CPU under each own function that reaches a stream send below it
	inside   map[string]int64 // CPU of each own function run under fn
	under    map[string]int64 // CPU under each own function
}

// isSend remembers streamSend's verdict per function name (at most
// maxSendMemo of them): a profile repeats a few thousand names across its
// samples.
var (
	isSend    sync.Map // string → bool
	sendMemos atomic.Int64
)

const maxSendMemo = 100_000

// sendAt is the index of the stream send in st (leaf first), or -1.
func sendAt(st stack) int {
	for j, fn := range st.funcs {
		v, ok := isSend.Load(fn)
		if !ok {
			v = streamSend.MatchString(fn)
			if len(fn) < 512 && sendMemos.Add(1) <= maxSendMemo { // a hostile profile's names are not all kept
				isSend.Store(fn, v)
			}
		}
		if v.(bool) {
			return j
		}
	}
	return -1
}

// loopAt is the index of fn in st, the outermost when it recurses; -1
// when fn is not there.
func loopAt(st stack, fn string) int {
	at := -1
	for k, f := range st.funcs {
		if f == fn {
			at = k
		}
	}
	return at
}

// findSendLoop finds the send loop: of the own functions that carry (near)
// all of the sending, the deepest that is not generated code and does
// work besides sending.
func findSendLoop(s *samples) sendLoop {
	l := sendLoop{sends: map[string]int64{}, inside: map[string]int64{}, under: map[string]int64{}}
	depth := map[string]int64{}
	generated := map[string]bool{}
	var most int64
	for _, st := range s.cpu {
		if s.stopped() {
			return sendLoop{}
		}
		j := sendAt(st)
		seen := map[string]bool{}
		for k, fn := range st.funcs {
			if st.kinds[k] != frames.Own || seen[fn] {
				continue
			}
			seen[fn] = true
			l.under[fn] += st.value
			if j >= 0 && k > j {
				l.sends[fn] += st.value
				depth[fn] += int64(k) * st.value
				most = max(most, l.sends[fn])
				if k < len(st.files) && generatedFile(st.files[k]) {
					generated[fn] = true
				}
			}
		}
	}
	if most == 0 {
		return l
	}
	var pickDepth float64
	for fn, sent := range l.sends {
		if float64(sent) < 0.97*float64(most) || generated[fn] || l.under[fn] <= sent {
			continue
		}
		d := float64(depth[fn]) / float64(sent)
		if l.fn == "" || d < pickDepth || d == pickDepth && fn < l.fn {
			l.fn, pickDepth = fn, d
		}
	}
	if l.fn == "" {
		return l
	}
	// A callback is called by the target's own code (an iterator, a store's
	// Each; through the standard library's, as sync.Map's Range), and the
	// handler by the protocol's library or by a generated stub.
	byOwn := map[bool]int64{}
	for _, st := range s.cpu {
		k := loopAt(st, l.fn)
		if k < 0 {
			continue
		}
		caller := k + 1
		for caller < len(st.funcs) && (st.kinds[caller] == frames.Runtime || st.kinds[caller] == frames.Std) {
			caller++
		}
		own := caller < len(st.funcs) && st.kinds[caller] == frames.Own &&
			!(caller < len(st.files) && generatedFile(st.files[caller]))
		byOwn[own] += st.value
		seen := map[string]bool{}
		for i := 0; i < k; i++ {
			if fn := st.funcs[i]; st.kinds[i] == frames.Own && !seen[fn] {
				seen[fn] = true
				l.inside[fn] += st.value
			}
		}
	}
	l.callback = byOwn[true] > byOwn[false]
	return l
}

// skips are the functions that are no walk because of the send loop: those
// that send (the loop and its callers), and, when the loop is a callback,
// those that run (mostly) inside it, once per message.
func (l sendLoop) skips(s *samples) func(fn string) bool {
	return func(fn string) bool {
		if l.sends[fn] > 0 {
			return true
		}
		return l.callback && 2*l.inside[fn] >= l.under[fn] && l.under[fn] > 0
	}
}

// perMessage is the send loop's work, when it is a share of the CPU: the
// samples under a callback that sends, or under a handler whose loop sends
// (less a walk of the data it also makes, which fullScan names), shown by
// what the loop calls per message.
func perMessage(r *Rule, s *samples, ev Evidence, facts replyFacts) *Finding {
	l := findSendLoop(s)
	if l.fn == "" {
		return nil
	}
	walk := ""
	if !l.callback {
		if cands, _ := walkCandidates(s); cands != nil {
			walk = pickWalk(cands, l.skips(s))
		}
	}
	var total, serving, sending, walked int64
	parts := map[string]int64{}
	chainW, chains := map[string]int64{}, map[string][]string{}
	var ids []int
	for _, st := range s.cpu {
		if s.stopped() {
			return nil
		}
		k := loopAt(st, l.fn)
		if k < 0 {
			continue
		}
		if walk != "" && loopAt(st, walk) >= 0 && loopAt(st, walk) < k {
			walked += st.value
			continue
		}
		total += st.value
		if st.serving {
			serving += st.value
		}
		ids = append(ids, st.id)
		name := "its own code"
		switch j := sendAt(st); {
		case j >= 0 && j < k:
			name = "sending the message"
			sending += st.value
		case k > 0:
			name = frames.DisplayName(st.funcs[k-1])
		}
		parts[name] += st.value
		chain := callers(st, k)
		key := strings.Join(chain, "\n")
		chainW[key] += st.value
		chains[key] = chain
	}
	cs := share(total, s.cpuTotal)
	if cs < r.MinShare || total < minCPUEvidence {
		return nil
	}
	names := heaviestFirst(parts)
	var shown []string
	for _, n := range names[:min(len(names), 4)] {
		shown = append(shown, fmt.Sprintf("%s %s", n, pct(share(parts[n], s.cpuTotal))))
	}
	how := "a callback the target's own code calls once per message, and it sends each"
	if !l.callback {
		how = "the handler, whose loop sends a message each turn"
	}
	ev2 := fmt.Sprintf("per message sent: %s — %s holds %s of the target's CPU (%s sending); it is %s: "+
		"its work grows with the messages a call sends, not with the data held, and is no scan of it",
		strings.Join(shown, ", "), frames.DisplayName(l.fn), pct(cs), pct(share(sending, s.cpuTotal)), how)
	if walked > 0 {
		ev2 += fmt.Sprintf("; a further %s of the CPU under it is %s, a walk of the data once a call (a finding of its own)",
			pct(share(walked, s.cpuTotal)), frames.DisplayName(walk))
	}
	return &Finding{Rule: r.ID, Class: r.Class, Suggestion: r.Suggestion, CPUShare: cs, CPUShareOfRequests: share(serving, s.requestTotal),
		Frames: heaviest(chainW, chains), OwnFrame: frames.DisplayName(l.fn), Evidence: ev2, cpuSamples: ids}
}
