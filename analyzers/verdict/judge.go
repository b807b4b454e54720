package verdict

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/machine"
	"github.com/probehq/probe/result"
)

// Name is what the findings' evidence calls the experiment.
const Name = "the experiment"

const (
	minWorkSamples = 20   // fewer CPU samples of the work in a variant: too few to compare
	minTolerance   = 0.3  // a change of CPU per request within this stays put
	noiseSigmas    = 2.5  // the tolerance is at least this many standard errors of the ratio
	slotConfidence = 0.99 // and at least the margin the seconds' own noise leaves at this confidence
	maxTolerance   = 0.6  // a wider tolerance than this compares nothing: inconclusive
)

// Judge measures the finding's work (the outermost of its rule's frames
// over it, else its innermost frame) and its own frame in each variant's
// profile, and says what they show.
// reads, when set, says why the work may be reading the request.
// overReply: the finding's rule works over the reply's own bytes.
// replies is what the replies say of the input.
func Judge(f analyzers.Finding, vs []Variant, profiles [][]*profile.Profile, reads string, overReply bool,
	replies ReplyEvidence) Finding {
	ef := Finding{Rule: f.Rule, ClassBefore: f.Class, Class: f.Class, Verdict: "inconclusive"}
	names := []string{f.Frames[0]}
	if f.WorkFrame != "" {
		names[0] = f.WorkFrame
	}
	if f.OwnFrame != "" && f.OwnFrame != names[0] {
		names = append(names, f.OwnFrame)
	}
	for _, name := range names {
		fr := Frame{Frame: name, CPUPerRequestMS: make([]float64, len(vs)), Samples: make([]int, len(vs)),
			SlotCPUPerRequestMS: make([][]float64, len(vs))}
		for i := range vs {
			var w work
			for k, prof := range profiles[i] {
				wp := workOf(prof, name)
				w.nanos, w.samples, w.readsRequest = w.nanos+wp.nanos, w.samples+wp.samples, w.readsRequest || wp.readsRequest
				slot := 0.0
				if k < len(vs[i].SlotRequests) && vs[i].SlotRequests[k] > 0 {
					slot = float64(wp.nanos) / 1e6 / float64(vs[i].SlotRequests[k])
				}
				fr.SlotCPUPerRequestMS[i] = append(fr.SlotCPUPerRequestMS[i], slot)
			}
			fr.Samples[i] = w.samples
			if vs[i].Requests > 0 {
				fr.CPUPerRequestMS[i] = float64(w.nanos) / 1e6 / float64(vs[i].Requests)
			}
			if name == names[0] && w.readsRequest && reads == "" {
				reads = "the work reads the request as it runs (a request reader or form parser below it)"
			}
		}
		ef.Frames = append(ef.Frames, fr)
	}
	m := newSlotModel(ef.Frames[0], vs)
	ef.Class, ef.Verdict, ef.Tolerance, ef.Why = verdictOf(m, f.Class, ef.Frames[0], vs, reads, overReply, replies)
	if strings.Contains(f.Evidence, analyzers.InvariantPending) {
		steady(&ef)
	}
	if m.spread.Measured() {
		ef.SlotNoise = m.spread.RelSD
	}
	return ef
}

// steady settles work invariant by nature that the profile showed given no
// input, on requests whose replies differ: a cost that stayed put when the
// input changed (whatever the replies did: they differ by the data) says
// what it is given is a constant, load-time; one that moved, or an
// experiment that could not tell, leaves it cacheable.
func steady(ef *Finding) {
	switch ef.Verdict {
	case "input-independent", "replies-with-input", "inputs-not-varied":
	default:
		return
	}
	figures := ""
	if i := strings.Index(ef.Why, "CPU per request of "); i >= 0 {
		figures = " " + ef.Why[i:]
	}
	ef.Class, ef.Verdict = "load-time", "steady-cost"
	ef.Why = fmt.Sprintf("%s: the work is invariant by nature and the profiles show it given no input; its CPU per request "+
		"stayed within ±%.0f%% when the input changed, so what it is given does not move with the request: a constant, "+
		"done once at load (the replies differ by the data the rest of the request reads).%s", Name, 100*ef.Tolerance, figures)
}

// tooFewSamples says who gave too few samples of the work, and what
// gives more.
func tooFewSamples(who string) string {
	return who + " gave too few samples of the work to compare (a longer --experiment-time gives more)"
}

// verdict is the class the experiment's figures of the work support;
// reads says why the work may read the request ("": no sign of it);
// overReply, that the work is over the reply's own bytes (compressing,
// encoding it), whose cost says how big a reply is, not whether it is the
// same one; replies, what the replies say of the input: another input
// that got another answer makes the work a function of the input, at most
// cacheable, however steady its cost.
func verdict(class string, work Frame, vs []Variant, reads string, overReply bool,
	replies ReplyEvidence) (string, string, float64, string) {
	return verdictOf(newSlotModel(work, vs), class, work, vs, reads, overReply, replies)
}

// verdictOf is verdict on the seconds' model m of work, fitted once.
func verdictOf(m slotModel, class string, work Frame, vs []Variant, reads string, overReply bool,
	replies ReplyEvidence) (string, string, float64, string) {
	spread, fig := m.spread, m.figure
	figures := func() string {
		var parts []string
		for i, v := range vs {
			if v.Error != "" {
				continue
			}
			reply := "another reply"
			if v.SameReply {
				reply = "the same reply"
			}
			if i == 0 {
				reply = strings.Replace(reply, "reply", "reply as the main run", 1)
			}
			parts = append(parts, fmt.Sprintf("%s %.3f ms (%d samples, %d requests, %s)", v.Name, work.CPUPerRequestMS[i], work.Samples[i],
				v.Requests, reply))
		}
		out := "CPU per request of " + work.Frame + ": " + strings.Join(parts, "; ")
		if m.fit == nil {
			return out
		}
		parts = parts[:0]
		for i, v := range vs {
			if i > 0 && m.inFit(i) {
				parts = append(parts, fmt.Sprintf("%s ×%.2f", v.Name, m.fit.Level[m.group[i]]))
			}
		}
		return out + "; compared turn for turn with same-key, each turn's own speed taken out: " + strings.Join(parts, ", ")
	}
	inconclusive := func(why string) (string, string, float64, string) {
		return class, "inconclusive", 0, why + "; the class stays " + class + ". " + figures()
	}
	if len(vs) == 0 || vs[0].Error != "" || work.Samples[0] < minWorkSamples {
		return inconclusive(tooFewSamples("the same request sent again"))
	}
	if overReply {
		for _, v := range vs {
			if v.Error == "" && v.DistinctReplies > 1 {
				return inconclusive(fmt.Sprintf("%s's replies differed byte for byte (%d distinct), and the work is over the "+
					"reply's bytes: it runs over bytes that change with every request, whatever it costs",
					v.Name, v.DistinctReplies))
			}
		}
	}
	if !vs[0].SameReply {
		return inconclusive("the same request sent again got another reply than in the main run (beyond nonces and timestamps)")
	}
	if why := spillsOver(vs, replies.InFlight); why != "" {
		return inconclusive(why)
	}
	noisy := func(name string) string {
		return fmt.Sprintf("the work's CPU per request varied ±%.0f%% from one second to the next of the same variant (%d "+
			"degrees of freedom), too noisy to tell a change of %s from the noise (a longer --experiment-time gives more "+
			"seconds, a narrower margin)", 100*spread.RelSD, spread.DF, name)
	}
	// compare is how far variant i's CPU per request is from base's (the
	// variants of pooled, each weighed by its requests), with two bounds.
	// stay is the widest change that counts as staying put: minTolerance,
	// or the sampling noise of n0 samples and of those variant i would
	// have had at base's CPU per request (a work that vanishes is a
	// change, not noise). margin is the change the seconds' own noise
	// explains (0: not measured). A move must pass both; staying put needs
	// the change within stay and a margin narrow enough to have seen a
	// move. The noise widens what counts as a move, never what counts as
	// staying.
	compare := func(base float64, n0 int, reqs int64, pooled []int, i int) (change, stay, margin float64) {
		expected := math.Max(1, float64(n0)*float64(vs[i].Requests)/float64(max(reqs, 1)))
		stay = math.Max(minTolerance, noiseSigmas*math.Sqrt(1/float64(n0)+1/expected))
		return relativeChange(fig(i), base), stay, m.margin(pooled, i)
	}
	// The controls are pooled into the base: same-key, and ignored-param
	// when the server did ignore it and its work stayed put.
	base, n0, reqs := fig(0), work.Samples[0], vs[0].Requests
	pooled := []int{0}
	stayTol, moveTol := minTolerance, math.Inf(1)
	var tested, movedBy, tooFew, tooNoisy []string
	moved := map[string]float64{} // each move's change
	// A control that moved is the machine's noise, measured: the input's
	// variants must then move more than twice as far to count, and
	// input-independence cannot be claimed at all.
	controlMoved, controlNoisy, noise := "", "", 0.0
	for i := 1; i < len(vs); i++ {
		v := vs[i]
		if v.Error != "" || v.ShouldMatter || !v.SameReply {
			continue
		}
		change, stay, margin := compare(fig(0), work.Samples[0], vs[0].Requests, []int{0}, i)
		switch {
		case stay > maxTolerance || math.IsNaN(change):
			return inconclusive(tooFewSamples(v.Name))
		case change > stay:
			// Beyond the tolerance: noise, measured, even when the
			// seconds' margin would explain it (the noise never widens
			// what counts as staying put).
			controlMoved, noise = v.Name, math.Max(noise, change)
			continue
		case margin > maxTolerance:
			// Too noisy to pool; an input that moves beyond the noise
			// the seconds showed still counts.
			controlNoisy = v.Name
			continue
		}
		base = (base*float64(reqs) + fig(i)*float64(v.Requests)) / float64(reqs+v.Requests)
		n0, reqs = n0+work.Samples[i], reqs+v.Requests
		pooled = append(pooled, i)
	}
	for i := 1; i < len(vs); i++ {
		v := vs[i]
		// A parameter the server does not ignore is an input that
		// matters; one whose reply was not kept is neither.
		if v.Error != "" || !v.ShouldMatter && (v.SameReply || v.StableDigest == "") {
			continue
		}
		change, stay, margin := compare(base, n0, reqs, pooled, i)
		move := math.Max(math.Max(stay, margin), 2*noise)
		switch {
		case math.IsNaN(change):
			tooFew = append(tooFew, v.Name)
		case change > move:
			movedBy = append(movedBy, v.Name)
			moveTol = math.Min(moveTol, move) // every move passed it
			moved[v.Name] = change
		case stay > maxTolerance:
			tooFew = append(tooFew, v.Name)
		case margin > maxTolerance || change > stay:
			tooNoisy = append(tooNoisy, v.Name)
		default:
			tested = append(tested, v.Name)
			stayTol = math.Max(stayTol, stay)
		}
	}
	if len(movedBy) == 0 && controlNoisy != "" {
		return inconclusive(noisy(controlNoisy))
	}
	if len(movedBy) == 0 && controlMoved != "" {
		return inconclusive(fmt.Sprintf("the work's CPU per request moved in %s, a change that should not matter: too noisy to tell",
			controlMoved))
	}
	if len(movedBy) == 0 && len(tooNoisy) > 0 {
		return inconclusive(noisy(strings.Join(tooNoisy, ", ")))
	}
	if len(movedBy) == 0 && len(tooFew) > 0 {
		return inconclusive(tooFewSamples(strings.Join(tooFew, ", ")))
	}
	busy := ""
	if busiest, n := busySeconds(vs); len(movedBy) > 0 && n > 0 {
		// Noise widens what counts as a move, and a busy machine's is
		// not in the seconds' spread when it lasts a variant's seconds:
		// on it a move must pass what the machine can do.
		far := slices.DeleteFunc(slices.Clone(movedBy), func(n string) bool { return !(moved[n] > busyMove) })
		if len(far) == 0 {
			how := fmt.Sprintf("up to %.2f cores", busiest)
			if busiest <= machine.BusyCores {
				how = "left out of the figures, which rest on the fewer seconds left"
			}
			return inconclusive(fmt.Sprintf("the work's CPU per request moved in %s, but other processes used more than %.2f "+
				"cores in %d of the experiment's seconds (%s), and a machine that busy moves the same work's CPU per request by "+
				"up to %.0f%%: too noisy to tell the input's move from the machine's (run it on a quiet machine)",
				strings.Join(movedBy, ", "), machine.BusyCores, n, how, 100*busyMove))
		}
		movedBy, moveTol = far, math.Max(moveTol, busyMove)
		busy = fmt.Sprintf(", farther than a machine this busy moves it: other processes used up to %.2f cores", busiest)
	}
	if len(movedBy) > 0 {
		also := busy
		if controlMoved != "" {
			also += fmt.Sprintf(", twice the %.0f%% that %s, a change that should not matter, moved", 100*noise, controlMoved)
		}
		return "cacheable", "moves-with-input", moveTol, fmt.Sprintf("%s: the work's CPU per request moved with the request's "+
			"input (%s, beyond ±%.0f%%%s), so it is a function of the input: it can be memoised per input, not moved to load time. %s",
			Name, strings.Join(movedBy, ", "), 100*moveTol, also, figures())
	}
	if reads != "" {
		return inconclusive(reads)
	}
	if replies.NoInput && len(tested) == 0 && replies.Answered == "" {
		// Nothing to vary: the call is a resource, as a page is.
		return "load-time", "input-independent", stayTol, fmt.Sprintf("%s: the request carries no input to vary (%s) and the "+
			"same request got the same reply, so the work does not depend on the request. %s",
			Name, NoInputInWords, figures())
	}
	if !slices.ContainsFunc(tested, func(n string) bool { return n != "other-header" && n != "without-headers" }) {
		return inconclusive("no other key of the endpoint and no other value of its body could be sent, so the input was never varied")
	}
	if overReply {
		for i, v := range vs {
			// The bytes themselves, not the digest with nonces masked.
			if i > 0 && v.Error == "" && (!v.SameReply || v.ReplyDigest != vs[0].ReplyDigest) {
				return inconclusive(fmt.Sprintf("the work is over the reply's bytes and %s got other bytes: a steady cost says "+
					"its replies cost alike to make, not that they are one piece of work (memoise it per key, or serve each "+
					"reply precompressed, if the keys are few)", v.Name))
			}
		}
	}
	if replies.Answered != "" {
		// Equal cost is not input independence: a sort of each user's
		// own list of one size costs the same for every user.
		return "cacheable", "replies-with-input", stayTol, fmt.Sprintf("%s: the work's CPU per request stayed within ±%.0f%% "+
			"when the input changed (%s), but %s; "+
			"a steady cost says the inputs cost alike, not that the result is one, so probe claims it can be memoised per input, "+
			"never moved to load time. %s",
			Name, 100*stayTol, strings.Join(tested, ", "), replies.Answered, figures())
	}
	if missing := notVaried(replies.Inputs, vs, tested); len(missing) > 0 {
		// An input probe did not vary is no evidence of none (issue 35):
		// an Accept-Language-keyed catalogue, a cookie's user, sent the
		// same every time, cost the same and answer the same.
		return "cacheable", "inputs-not-varied", stayTol, fmt.Sprintf("%s: the work's CPU per request stayed within ±%.0f%% "+
			"when the input changed (%s), but it %s (%s). %s",
			Name, 100*stayTol, strings.Join(tested, ", "), analyzers.NotVariedInWords(missing), whyNotVaried(missing, vs), figures())
	}
	echoed := ""
	if replies.Echoed {
		echoed = " (other inputs' replies differed only where they quote the request, or in nonces and timestamps)"
	}
	return "load-time", "input-independent", stayTol, fmt.Sprintf("%s: the work's CPU per request stayed within ±%.0f%% when "+
		"the input changed (%s) and the same request got the same reply%s, so the work does not depend on the request. %s",
		Name, 100*stayTol, strings.Join(tested, ", "), echoed, figures())
}

// Clients is how many clients the experiment's closed loop
// runs: the main run's, fewer when its rate says that so many requests in
// flight at each change of variant would spill over (spillsOver). A
// server that was saturated serves as many requests a second with fewer
// clients, so each change leaves fewer of its second to the next
// variant; a server slow per request (not saturated) gains nothing, and
// the guard still says so. Under the race detector the trap's 4 clients
// at 23 requests a second were 17% of a second; one client is 4%.
func Clients(run *result.Run, clients int) int {
	var calls int64
	for _, op := range run.Ops {
		if !op.Setup {
			calls += op.Calls
		}
	}
	if run.Duration <= 0 || calls == 0 || clients <= 1 {
		return clients
	}
	perSecond := float64(calls) / run.Duration.Seconds()
	return max(1, min(clients, int(maxSpill/2*perSecond)))
}

// maxSpill is the most of a variant's second that the requests in flight
// when the variant changes may be: their work is done in the next
// variant's second.
const maxSpill = 0.15

// spillsOver says why the seconds cannot tell one variant's work from the
// next's ("" when they can): a request is counted in the second it is
// sent, and each of the inFlight clients' requests sent before a switch
// is served after it, in the next variant's profile. On a slow MCP
// server (p95 0.7 s, 175 calls a second from 32 clients) that moved the
// same work 2× from one variant to its neighbour.
func spillsOver(vs []Variant, inFlight int) string {
	for _, v := range vs {
		if v.Error != "" || len(v.SlotRequests) == 0 || v.Requests == 0 {
			continue
		}
		perSecond := float64(v.Requests) / float64(len(v.SlotRequests))
		if spill := float64(inFlight) / perSecond; spill > maxSpill {
			return fmt.Sprintf("%s sent %.0f requests a second from %d clients: the %d in flight when the variant changes are "+
				"%.0f%% of its second, "+
				"served in the next variant's profile, more than the %.0f%% the seconds can tell apart (a slow server: fewer "+
				"clients, --concurrency, let each second hold its own)",
				v.Name, perSecond, inFlight, inFlight, 100*spill, 100*maxSpill)
		}
	}
	return ""
}

// relativeChange is how far x is from base as the larger of their ratios
// less one, so that a third cheaper counts as far as a third dearer
// (0.7× is 43%, not 30%); a work that vanishes is an infinite change, and
// NaN is a figure that cannot be compared.
func relativeChange(x, base float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(base) || base <= 0:
		return math.NaN()
	case x <= 0:
		return math.Inf(1)
	}
	return math.Max(x/base, base/x) - 1
}

// Apply sets the finding's class, evidence and fix from the
// experiment; rule is the finding's rule (nil: not in the catalog).
func Apply(f *analyzers.Finding, ef Finding, rule *analyzers.Rule) {
	Reclass(f, ef.Verdict, ef.Why, rule)
}

// MadePerRequest is the source's verdict, not the experiment's: --verify
// read that the hot call's input is computed from the request.
const MadePerRequest = "made-per-request"

// Reclass sets the finding's class, evidence and fix from a verdict and
// what showed it: the experiment's, or the source's (MadePerRequest).
func Reclass(f *analyzers.Finding, verdict, why string, rule *analyzers.Rule) {
	ef := Finding{Verdict: verdict, Why: why}
	switch ef.Verdict {
	case "input-independent":
		f.Class = "load-time"
		f.Evidence += "; " + ef.Why
		f.Suggestion = "Its cost did not move with the request: do this work once, at start-up or when the data it reads " +
			"changes, and reuse the result."
		if rule != nil && rule.Suggestion != "" {
			f.Suggestion = "Its cost did not move with the request. " + rule.Suggestion
		}
	case "moves-with-input":
		f.Class = "cacheable"
		f.Evidence += "; " + ef.Why
		f.Suggestion = "Memoise this work per input (keyed by what the request varies) and reuse it until the data changes; its " +
			"cost moves with the request, so it cannot move to load time."
	case "inputs-not-varied":
		f.Class = "cacheable"
		f.Evidence += "; " + ef.Why
		f.Suggestion = "Memoise this work per input, keyed by what the request carries (the headers named included), and reuse " +
			"it until the data changes; " +
			"move it to load time only once the experiment has varied every input the server may read and its cost and reply stayed put."
	case "steady-cost":
		f.Class = "load-time"
		f.Evidence += "; " + ef.Why
		if rule != nil && rule.Suggestion != "" {
			f.Suggestion = rule.Suggestion
		}
	case "replies-with-input":
		f.Class = "cacheable"
		f.Evidence += "; " + ef.Why
		f.Suggestion = "Memoise this work per input (keyed by what the request varies) and reuse it until the data changes; " +
			"another input gets another result, so it cannot move to load time unless the inputs are few and known."
	case MadePerRequest:
		f.Class = "cacheable"
		f.Evidence += "; " + ef.Why
		f.Suggestion = "Memoise this work by its input and reuse it until the data it reads changes; it moves to load time only " +
			"if the inputs are a fixed set known at start (then compute each once there)."
	default:
		f.Evidence += "; " + Name + " was inconclusive (see the report's experiment)"
	}
}

// notVaried are the input headers of the base request (each must be
// varied, with the same reply and the same work, before a load-time
// claim) that no variant in tested varies.
func notVaried(headers []string, vs []Variant, tested []string) []string {
	var out []string
	for _, h := range headers {
		covered := false
		for _, v := range vs {
			if slices.Contains(tested, v.Name) && slices.ContainsFunc(v.Varies, func(n string) bool { return strings.EqualFold(n, h) }) {
				covered = true
			}
		}
		if !covered {
			out = append(out, h)
		}
	}
	return out
}

// whyNotVaried says, for each input not varied, what became of the
// variants that vary it: void with its errors, noisy, left out, or none.
func whyNotVaried(names []string, vs []Variant) string {
	var parts []string
	for _, v := range vs {
		if !slices.ContainsFunc(v.Varies, func(n string) bool {
			return slices.ContainsFunc(names, func(h string) bool { return strings.EqualFold(n, h) })
		}) {
			continue
		}
		if v.Error != "" {
			parts = append(parts, v.Name+": "+v.Error)
		} else {
			parts = append(parts, v.Name+" could not be compared")
		}
	}
	if len(parts) == 0 {
		return "no variant of the protocol varies it"
	}
	return strings.Join(parts, "; ")
}

// NoInputInWords says what a request without input is.
const NoInputInWords = "a JSON body of no members, no query, no input header"

// busyMove is the change a move must pass when other processes used the
// machine: twice or half. A busy sibling hyperthread slows the same work
// by up to a third (CI: +42% in one variant's two seconds).
const busyMove = 1.0

// busySeconds is the most cores other processes used in a second the
// variants were measured in, and how many of the experiment's seconds
// passed machine.BusyCores: those measured and those left out. A second
// left out leaves its variant's noise measured on fewer seconds, or on
// one (its spread unknown), while the machine was busy.
func busySeconds(vs []Variant) (busiest float64, n int) {
	for _, v := range vs {
		if v.Error != "" {
			continue
		}
		n += v.BusySecondsLeftOut
		for _, c := range v.SlotOthersCores {
			busiest = max(busiest, c)
			if c > machine.BusyCores {
				n++
			}
		}
	}
	return busiest, n
}
