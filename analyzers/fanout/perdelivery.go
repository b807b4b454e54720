// Package fanout is the analysis of probe ws's per-delivery experiment:
// the work a fan-out does once for every subscriber of every event, told
// from its work once per event by the CPU of slots with subscribers and
// without; and a profile's CPU by the innermost own function.
package fanout

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/frames"
)

// PerDeliveryRule is the finding of work a fan-out does once for every
// subscriber of every event (probe ws's experiment).
const PerDeliveryRule = "per-delivery-work"

// Slot is one CPU profile of the per-delivery experiment: events
// published to rooms with subscribers (Subscribed) or to a room no
// connection joined, and the deliveries they meant.
type Slot struct {
	CPU        *profile.Profile
	Subscribed bool
	Events     int
	Deliveries int64
}

// DeliveryWork is one function's figures in the experiment.
type DeliveryWork struct {
	Function string `json:"function"` // the innermost own function over the work
	// Calls is the call of Function the figures are of ("": all of it).
	Calls string `json:"calls,omitempty"`
	// Kind is the catalog's rule whose frames do most of it ("" none).
	Kind string `json:"kind,omitempty"`
	// CPU per event, µs, with subscribers (and in the two halves of those
	// slots, the control) and without any.
	PerEventUS      float64    `json:"cpu_per_event_us"`
	HalvesUS        [2]float64 `json:"cpu_per_event_halves_us"`
	EmptyPerEventUS float64    `json:"cpu_per_event_no_subscribers_us"`
	PerDeliveryUS   float64    `json:"cpu_per_delivery_us"`
	Samples         int        `json:"samples"`
	EmptySamples    int        `json:"samples_no_subscribers"`
	Share           float64    `json:"share"` // of the CPU of the slots with subscribers
	// Verdict: "per-delivery", "per-event", "noisy" (the halves differ),
	// "too-few" (samples) or "in-library" (it grew with subscribers inside
	// a library's call the catalog does not name: most likely the
	// library's own fan-out, handing the event to each subscriber).
	Verdict string `json:"verdict"`

	stack []string // its heaviest stack with subscribers, the work first
}

const (
	perDeliveryMinSamples = 20   // of the work with subscribers
	perDeliveryMinShare   = 0.05 // of the fan-out's CPU
	perDeliveryFalls      = 0.25 // CPU per event without subscribers below this much of with: per-delivery
	perDeliveryMinTol     = 0.3  // the control's halves may differ by this much
)

// socketWrite is the writing of a message to its socket (TLS's sealing of
// it included): per delivery by nature, never a finding.
var socketWrite = regexp.MustCompile(`^net\.\(\*conn\)\.Write|^net\.\(\*netFD\)\.|^internal/poll\.|^syscall\.|^internal/syscall|` +
	`^crypto/tls\.\(\*Conn\)\.(Write|write)|^bufio\.\(\*Writer\)\.(Flush|Write)`)

// wsLibrary is a WebSocket library's frames. Its framing of a message
// (the header, the mask, permessage-deflate) is per delivery by nature;
// a value its caller handed it to encode (gorilla's WriteJSON, wsjson)
// is the caller's work, done again for each subscriber it is written to.
var wsLibrary = regexp.MustCompile(`^github\.com/coder/websocket[./]|^nhooyr\.io/websocket[./]|^github\.com/gorilla/websocket[./]|` +
	`^golang\.org/x/net/websocket[./]|^github\.com/gobwas/ws`)

// framingKinds are the catalog's work a WebSocket library does as framing:
// compression (permessage-deflate) runs per connection, in the
// connection's own compression context.
var framingKinds = map[string]bool{"repeated-gzip": true}

// cacheableKinds are the catalog's rules whose work, repeated per
// subscriber, could be done once and shared: hashing, encoding, compressing.
var cacheableKinds = map[string]string{
	"repeated-hash":            "authorise (or hash) once per subscription, when it joins, not once per delivery",
	"repeated-json-encode":     "encode once per event, write the same bytes to each subscriber",
	"repeated-xml-encode":      "encode once per event, write the same bytes to each subscriber",
	"repeated-gzip":            "compress the event once and send the same bytes to every subscriber",
	"repeated-markdown-render": "render the event once and send the same bytes to every subscriber",
}

// PerDelivery compares the work's CPU per event with subscribers and
// without: the findings of work that falls to near nothing without
// subscribers, and every measured function's figures, largest first.
// Each sample is the work of its innermost own function; samples that
// write to a socket, or only schedule (the runtime under own code), are
// the delivery itself and left out. mainModule is the target's main
// module when known (a goroutine profile's main.main: a CPU profile
// rarely samples it); "": from the slots' profiles.
func PerDelivery(slots []Slot, rules []analyzers.Rule, mainModule string) ([]analyzers.Finding, []DeliveryWork) {
	var ps []*profile.Profile
	for _, s := range slots {
		ps = append(ps, s.CPU)
	}
	code := frames.Code{MainModule: cmp.Or(mainModule, frames.MainModule(ps...))}
	type acc struct {
		nanos   [3]int64 // with subscribers (half 0, half 1), without
		samples [3]int
		library int64 // with subscribers, inside a library call of no catalogued kind
		kinds   map[string]int64
		chainW  map[string]int64 // the stacks of the work with subscribers, by weight
		chains  map[string][]string
	}
	works := map[workKey]*acc{}
	var events [3]int
	var deliveries int64
	var fanout int64 // all CPU of the slots with subscribers
	half := 0
	for _, s := range slots {
		part := 2
		if s.Subscribed {
			part = half
			half = 1 - half
			deliveries += s.Deliveries
		}
		events[part] += s.Events
		sts, total := analyzers.Samples(s.CPU, "cpu", code)
		// A profile holds each distinct stack once, with its count: the
		// samples are its CPU over the sampling period.
		period := int64(10_000_000)
		if s.CPU != nil && s.CPU.Period > 0 {
			period = s.CPU.Period
		}
		if s.Subscribed {
			fanout += total
		}
		for _, st := range sts {
			d, ok := deliveryWorkOf(st, rules)
			if !ok {
				continue
			}
			fn, callee := d.own, d.callee
			// Each sample counts for its own function, and for the call
			// it made there: an own function that does per-event work and
			// calls a library once per subscriber shows the call apart.
			keys := []workKey{{fn, ""}}
			if callee != "" {
				keys = append(keys, workKey{fn, callee})
			}
			for _, k := range keys {
				a := works[k]
				if a == nil {
					a = &acc{kinds: map[string]int64{}, chainW: map[string]int64{}, chains: map[string][]string{}}
					works[k] = a
				}
				a.nanos[part] += st.Value
				a.samples[part] += int(max(1, (st.Value+period/2)/period))
				if part < 2 {
					if d.library {
						a.library += st.Value
					}
					a.kinds[d.kind] += st.Value
					chain := st.Callers(d.from)
					key := strings.Join(chain, "\n")
					a.chainW[key] += st.Value
					a.chains[key] = chain
				}
			}
		}
	}
	subscribed := events[0] + events[1]
	if subscribed == 0 || events[2] == 0 || fanout == 0 {
		return nil, nil
	}
	perDelivery := float64(deliveries) / float64(subscribed)
	us := func(n int64, e int) float64 {
		if e == 0 {
			return 0
		}
		return float64(n) / 1e3 / float64(e)
	}
	var out []DeliveryWork
	for key, a := range works {
		with := a.nanos[0] + a.nanos[1]
		w := DeliveryWork{Function: frames.DisplayName(key.own), Calls: frames.DisplayName(key.callee), PerEventUS: us(with, subscribed),
			HalvesUS:        [2]float64{us(a.nanos[0], events[0]), us(a.nanos[1], events[1])},
			EmptyPerEventUS: us(a.nanos[2], events[2]), Samples: a.samples[0] + a.samples[1], EmptySamples: a.samples[2],
			Share: float64(with) / float64(fanout), stack: analyzers.Heaviest(a.chainW, a.chains)}
		if w.Share < perDeliveryMinShare/2 {
			continue
		}
		var best int64
		for k, v := range a.kinds {
			if k != "" && v > best && 2*v >= with {
				w.Kind, best = k, v
			}
		}
		if perDelivery > 0 {
			w.PerDeliveryUS = math.Max(0, w.PerEventUS-w.EmptyPerEventUS) / perDelivery
		}
		// The control: the two halves of the slots with subscribers
		// must agree within their sampling noise, unless each of them
		// alone shows the fall (their spread then moves the figures, not
		// the verdict).
		tol := math.Max(perDeliveryMinTol, 2.5*math.Sqrt(1/float64(max(1, a.samples[0]))+1/float64(max(1, a.samples[1]))))
		// Without subscribers, at the CPU per event with them, the empty
		// slots would have had this many samples: enough to see it fall.
		expected := float64(w.Samples) * float64(events[2]) / float64(subscribed)
		lo, hi := min(w.HalvesUS[0], w.HalvesUS[1]), max(w.HalvesUS[0], w.HalvesUS[1])
		switch {
		case w.Samples < perDeliveryMinSamples || expected < perDeliveryMinSamples:
			w.Verdict = "too-few"
		case w.EmptyPerEventUS < perDeliveryFalls*lo:
			w.Verdict = "per-delivery"
		case hi-lo > tol*hi:
			w.Verdict = "noisy"
		case w.EmptyPerEventUS < perDeliveryFalls*w.PerEventUS:
			w.Verdict = "per-delivery"
		default:
			w.Verdict = "per-event"
		}
		// Work that grew inside a library's call, none of it the catalog's,
		// is the library's unless the own function calls it once per
		// subscriber, which a profile cannot tell from the library's own
		// loop over them (Centrifugo's hub, enqueueing each delivery).
		if w.Verdict == "per-delivery" && 2*a.library >= with {
			w.Verdict = "in-library"
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Share != b.Share {
			return a.Share > b.Share
		}
		return a.Function < b.Function || a.Function == b.Function && a.Calls < b.Calls
	})
	// A call that is (nearly) all of its function's work says nothing
	// the function's figures do not.
	whole := map[string]float64{}
	for _, w := range out {
		if w.Calls == "" {
			whole[w.Function] = w.Share
		}
	}
	out = slices.DeleteFunc(out, func(w DeliveryWork) bool { return w.Calls != "" && w.Share >= 0.95*whole[w.Function] })
	// A function found per delivery is one finding; a call of it is one
	// only when the function as a whole was not (its per-event work hid
	// the call's).
	claimed := map[string]bool{}
	for _, w := range out {
		if w.Calls == "" && w.Verdict == "per-delivery" && w.Share >= perDeliveryMinShare {
			claimed[w.Function] = true
		}
	}
	var findings []analyzers.Finding
	for _, w := range out {
		if w.Verdict != "per-delivery" || w.Share < perDeliveryMinShare || w.Calls != "" && claimed[w.Function] {
			continue
		}
		if w.Calls != "" {
			claimed[w.Function] = true // one finding a function, its largest call's
		}
		findings = append(findings, perDeliveryFinding(w, perDelivery, rules))
	}
	return findings, out
}

// deliveryWork is what a sample of the experiment is the work of.
type deliveryWork struct {
	own, callee string // the innermost own function, and the call it made there ("" none)
	kind        string // the catalog's rule over the sample ("" none)
	from        int    // the frame its stack is shown from: the kind's, else the call's, else own's
	library     bool   // the work is a third-party call's, of no catalogued kind
}

// workKey is a function and, when set, the call it made.
type workKey struct{ own, callee string }

// deliveryWorkOf is the work of a sample, unless the sample is the
// delivery itself: a socket write below its innermost own function, a
// WebSocket library's framing there (the library's frames with none of the
// catalog's work under them but compressing), or only the runtime
// (channels, the scheduler, timers) and small standard helpers (context,
// time, sync) under it. Frames above the own function are its callers, not
// what it does.
func deliveryWorkOf(st analyzers.Sample, rules []analyzers.Rule) (deliveryWork, bool) {
	own := slices.Index(st.Kinds, frames.Own)
	if own < 0 {
		return deliveryWork{}, false
	}
	kind, at := analyzers.KindAt(st, rules)
	plumbing, library := true, false
	for i := range own {
		fn := st.Funcs[i]
		if socketWrite.MatchString(fn) {
			return deliveryWork{}, false
		}
		library = library || wsLibrary.MatchString(fn)
		if !scheduling(fn, st.Kinds[i]) {
			plumbing = false
		}
	}
	if library && (kind == "" || framingKinds[kind] || at > own) || plumbing && own > 0 {
		return deliveryWork{}, false
	}
	d := deliveryWork{own: st.Funcs[own], kind: kind, from: own}
	if own > 0 {
		d.callee, d.from = st.Funcs[own-1], own-1
		d.library = kind == "" && st.Kinds[own-1] == frames.ThirdParty
	}
	if kind != "" && at >= 0 && at < own {
		d.from = at
	}
	return d, true
}

// scheduling says whether a frame is the machinery of handing a message
// on rather than work on it.
func scheduling(fn, kind string) bool {
	if kind == frames.Runtime {
		return true
	}
	for _, p := range []string{"context.", "time.", "sync.", "sync/atomic.", "internal/"} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

func perDeliveryFinding(w DeliveryWork, perDelivery float64, rules []analyzers.Rule) analyzers.Finding {
	class, fix := "info", "do it once per event (or once per subscription, when it joins) and reuse the result for every subscriber"
	what := ""
	if s, ok := cacheableKinds[w.Kind]; ok {
		class, fix = "cacheable", s
	}
	for _, r := range rules {
		if r.ID == w.Kind && r.What != "" {
			what = " (" + r.What + ", as " + r.ID + " names it)"
		}
	}
	subject, fr := w.Function, []string{w.Function}
	if w.Calls != "" {
		subject, fr = w.Calls+" called from "+w.Function, []string{w.Calls, w.Function}
	}
	ev := fmt.Sprintf("%s%s runs once for every subscriber of every event (%.0f deliveries per event): "+
		"the experiment published events to the rooms and to a room no connection joined, and its CPU per event fell from %.1f µs "+
		"(halves %.1f and %.1f µs, %d samples) to %.1f µs without subscribers (%d samples): %.2f µs per delivery, "+
		"%.0f%% of the target's CPU while it fanned out (the experiment's slots with subscribers)",
		subject, what, perDelivery, w.PerEventUS, w.HalvesUS[0], w.HalvesUS[1], w.Samples, w.EmptyPerEventUS, w.EmptySamples,
		w.PerDeliveryUS, 100*w.Share)
	if len(w.stack) > 0 {
		ev += "; its heaviest stack: " + strings.Join(w.stack, " ← ")
		fr = w.stack
	}
	return analyzers.Finding{Rule: PerDeliveryRule, Class: class, Severity: analyzers.Severity(w.Share), CPUShare: w.Share,
		Frames: slices.Clip(fr), OwnFrame: w.Function, Evidence: ev,
		Suggestion: "It repeats per subscriber, not per event: " + fix + "."}
}

// SocketWrites is OwnTop's name for the samples that write to a socket
// (or frame a WebSocket message), whichever own code called it.
const SocketWrites = "(writing to sockets)"

// OwnTop is what a CPU profile's time went to by the innermost own
// function of each sample, the n largest with their shares of all of it
// (the rest is the runtime's and libraries' with no own code above);
// socket writes and WebSocket framing are SocketWrites, told apart from
// the work own code hands the library (an encode inside gorilla's
// WriteJSON) as the experiment tells them (deliveryWorkOf).
func OwnTop(p *profile.Profile, n int, rules []analyzers.Rule, mainModule string) []analyzers.ShareOfWork {
	code := frames.Code{MainModule: cmp.Or(mainModule, frames.MainModule(p))}
	sts, total := analyzers.Samples(p, "cpu", code)
	parts := map[string]int64{}
	for _, st := range sts {
		own := slices.Index(st.Kinds, frames.Own)
		if own < 0 {
			continue
		}
		if _, ok := deliveryWorkOf(st, rules); !ok && slices.ContainsFunc(st.Funcs[:own], func(fn string) bool {
			return socketWrite.MatchString(fn) || wsLibrary.MatchString(fn)
		}) {
			parts[SocketWrites] += st.Value
			continue
		}
		parts[frames.DisplayName(st.Funcs[own])] += st.Value
	}
	var out []analyzers.ShareOfWork
	for fn, v := range parts {
		out = append(out, analyzers.ShareOfWork{Work: fn, Share: float64(v) / float64(total)})
	}
	sort.Slice(out, func(a, b int) bool {
		return out[a].Share > out[b].Share || out[a].Share == out[b].Share && out[a].Work < out[b].Work
	})
	return out[:min(n, len(out))]
}
