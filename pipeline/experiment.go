package pipeline

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
)

// The experiment (DESIGN.md): probe drives the load, so when a finding's
// class rests on thin evidence (info, or cacheable from the replies alone)
// it tests its own hypothesis. It sends the endpoint's busiest request
// again as it was (same-key), with a query parameter of probe's own that
// the server should ignore (ignored-param), and as other keys of the same
// endpoint the microload itself sends (other-key-N), interleaved in one
// short load, a profiled second each in turn. Work whose CPU per request stays put across all of them,
// while the same request gets the same reply, does not depend on the
// request: load-time. Work whose CPU per request moves with the input is
// a function of it: cacheable. So is work of a steady cost when another
// input got another reply (beyond nonces and echoes of the request, in the
// variants or the main run): equal cost is not input independence, and a
// sort of each user's own list of one size is memoised per user, never
// done once at load. Anything less clear keeps its class.

// MinExperimentTime is the least --experiment-time: a profiled second for
// each of four variants, and the set-up around them.
const MinExperimentTime = 6 * time.Second

// IgnoredParam is the query parameter of the ignored-param variant:
// probe's own name, which no server reads.
const IgnoredParam = "probe-experiment"

const (
	maxOtherKeys    = 2    // other keys of the endpoint tried
	minWorkSamples  = 20   // fewer CPU samples of the work in a variant: too few to compare
	minTolerance    = 0.3  // a change of CPU per request within this stays put
	noiseSigmas     = 2.5  // the tolerance is at least this many standard errors of the ratio
	slotConfidence  = 0.99 // and at least the margin the seconds' own noise leaves at this confidence
	maxTolerance    = 0.6  // a wider tolerance than this compares nothing: inconclusive
	variantWarmup   = 300 * time.Millisecond
	variantOverhead = 700 * time.Millisecond // Prepare, the profiles' fetches, the end of the run
	maxScannedCalls = 4096                   // calls of a session looked through for a variant's key
	experimentName  = "the experiment"
)

// WithExperiment is p running the experiment within budget after each
// profiled Measure whose findings rest on thin evidence (budget 0: never).
func (p *Pipeline) WithExperiment(budget time.Duration) *Pipeline {
	q := *p
	q.o.Experiment = budget
	return &q
}

// requestVariant is one way of sending the base request again.
type requestVariant struct {
	name         string
	shouldMatter bool
	key          string                        // the microload's key whose call is sent
	alter        func(*h1.Request) *h1.Request // nil: as the microload sends it
}

// keyOf is the reply-digest key of the variant's calls: an altered request
// is kept apart from the key it came from.
func (v requestVariant) keyOf() string {
	if v.alter == nil {
		return v.key
	}
	return v.key + " +" + IgnoredParam
}

// experiment runs the variants of run's busiest key and reclassifies the
// eligible findings of a by what they showed.
func (p *Pipeline) experiment(ctx context.Context, ml probes.Microload, t *probes.Target, o probes.LoadOptions, run *probes.Run,
	a report.Analysis) report.Analysis {
	var eligible []int
	for i, f := range a.Findings {
		switch {
		case !experimentEligible(f):
		case overVaryingReplies(ruleOf(p.o.Rules, f.Rule), run):
			a.Findings[i].Evidence += "; " + experimentName + " was not run on it: a request key's replies differed byte for byte, and this work is over the reply's bytes, so it runs over bytes that change per request whatever it costs"
		default:
			eligible = append(eligible, i)
		}
	}
	if len(eligible) == 0 || o.Profile == nil || run.Profiles == nil || run.Ended != "" {
		return a
	}
	e := &report.Experiment{Endpoint: endpoints(run), BudgetS: p.o.Experiment.Seconds()}
	a.Experiment = e
	base, others := experimentKeys(run)
	if base == nil {
		e.Skipped = "the run kept no reply key of the endpoint to send again"
		return a
	}
	variants := []requestVariant{{name: "same-key", key: base.Key},
		{name: "ignored-param", key: base.Key, alter: withIgnoredParam}}
	for i, k := range others {
		variants = append(variants, requestVariant{name: fmt.Sprintf("other-key-%d", i+1), shouldMatter: true, key: k.Key})
	}
	window := p.o.Experiment - variantWarmup - variantOverhead
	slots := int(window / (slotLength + slotGap))
	if slots < len(variants) {
		e.Skipped = fmt.Sprintf("--experiment-time %s leaves less than a second of profile to each of %d variants", p.o.Experiment, len(variants))
		return a
	}
	began := time.Now()
	profiles, got, err := p.runVariants(ctx, ml, t, o, variants, window, slots, e)
	e.TookS = time.Since(began).Seconds()
	if err != nil {
		e.Skipped = err.Error()
		return a
	}
	markReplies(e, run, base.Key)
	replies := readInputReplies(run, base, e.Variants, got)
	for _, i := range eligible {
		f := &a.Findings[i]
		rule := ruleOf(p.o.Rules, f.Rule)
		reads := ""
		if base.BodyBytes > 0 && rule != nil && rule.Input {
			reads = "the requests carry bodies and the work may be decoding them: same-shaped bodies cost alike, so a steady CPU per request proves nothing"
		}
		ef := judgeFinding(*f, e.Variants, profiles, reads, rule != nil && rule.OverReplyBytes(), replies)
		e.Findings = append(e.Findings, ef)
		applyVerdict(f, ef, rule)
	}
	return a
}

// experimentEligible: a finding the analysis could not settle from the
// replies, with a frame to measure. Decoding the request's own input is
// per-request by nature; no experiment can move it.
func experimentEligible(f analyzers.Finding) bool {
	if f.Class != "info" && f.Class != "cacheable" || len(f.Frames) == 0 || f.WaitShare > 0 {
		return false
	}
	return !strings.Contains(f.Evidence, "arrives with each request")
}

// overVaryingReplies: the finding's work makes the whole reply or a part
// that varies (its rule's scope: compressing, encoding, a token), and the
// same request's replies differed byte for byte in the run (a nonce, a
// timestamp). The replies have settled it: such work runs over bytes that
// change with every request, so neither a steady cost (load-time) nor one
// that moves with the key (memoise per input) would be true of it. On
// Caddy, gzip of a page stamped with the time per request cost the same
// for every page, and a steady cost would have called it load-time.
func overVaryingReplies(rule *Rule, run *probes.Run) bool {
	if rule == nil || !rule.OverReplyBytes() {
		return false
	}
	for _, d := range measuredDigests(run) {
		if d.Distinct > 1 {
			return true
		}
	}
	return false
}

// measuredDigests are the run's reply keys of operations that are not
// set-up, with a request.
func measuredDigests(run *probes.Run) []probes.Digest {
	setup := map[string]bool{}
	for _, op := range run.Ops {
		setup[op.Name] = op.Setup
	}
	var ds []probes.Digest
	for _, d := range run.Digests {
		if !setup[d.Op] && d.Requests > 0 {
			ds = append(ds, d)
		}
	}
	return ds
}

// experimentKeys are the run's busiest measured key and up to
// maxOtherKeys other keys of the same operation, busiest first.
func experimentKeys(run *probes.Run) (base *probes.Digest, others []probes.Digest) {
	ds := measuredDigests(run)
	if len(ds) == 0 {
		return nil, nil
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].Requests > ds[j].Requests })
	for _, d := range ds[1:] {
		if d.Op == ds[0].Op && len(others) < maxOtherKeys {
			others = append(others, d)
		}
	}
	return &ds[0], others
}

// withIgnoredParam is r with probe's own query parameter added.
func withIgnoredParam(r *h1.Request) *h1.Request {
	sep := "?"
	if strings.Contains(r.Path, "?") {
		sep = "&"
	}
	return h1.NewRequest(r.Method, r.Path+sep+IgnoredParam+"=1", r.Body, r.Header...)
}

// The variants run interleaved in one load, a second each in turn, each
// second its own CPU profile: a machine whose speed drifts (other
// processes, a busy host) slows every variant alike. Run one after the
// other, the same request's CPU per request differed by up to 60% on a
// shared machine.
const (
	slotLength = time.Second
	slotGap    = 100 * time.Millisecond // a profile's fetch and write around its second
)

// runVariants loads all the variants, switching every slot, and returns
// the CPU profiles of each variant's slots and the reply each kept;
// e.Variants gets their figures.
func (p *Pipeline) runVariants(ctx context.Context, ml probes.Microload, t *probes.Target, o probes.LoadOptions, vs []requestVariant,
	window time.Duration, slots int, e *report.Experiment) ([][]*profile.Profile, []keptReply, error) {
	vl := newVariantLoad(ml, vs)
	profiles := make([][]*profile.Profile, len(vs))
	requests := make([][]int64, len(vs))
	var slotErr error
	vo := o
	vo.Duration, vo.Warmup, vo.RequestTimes, vo.Profile, vo.Progress = window, variantWarmup, false, nil, nil
	if p.o.UI != nil {
		vo.Progress = func(pr probes.Progress) { p.o.UI.Progress("experiment", pr) }
	}
	vo.During = func(ctx context.Context) {
		for k := range slots {
			i := k % len(vs)
			vl.current.Store(int32(i))
			// The requests of the profile's second, counted when it ends,
			// not when the profile has been written and read back.
			before := vl.sent[i].Load()
			var counted atomic.Int64
			counted.Store(-1)
			timer := time.AfterFunc(slotLength, func() { counted.Store(vl.sent[i].Load() - before) })
			prof, err := fetchCPUProfile(ctx, o.Profile, slotLength)
			timer.Stop()
			if ctx.Err() != nil {
				return // the window ended inside this slot: its profile is cut
			}
			if err != nil {
				slotErr = fmt.Errorf("the experiment's CPU profile of slot %d: %v", k+1, err)
				return
			}
			profiles[i] = append(profiles[i], prof)
			n := counted.Load()
			if n < 0 { // the profile came back early
				n = vl.sent[i].Load() - before
			}
			requests[i] = append(requests[i], n)
		}
	}
	run, err := p.o.Load(ctx, vl, t, vo)
	if p.o.UI != nil {
		p.o.UI.Done()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the experiment's load: %v", err)
	}
	if slotErr != nil {
		return nil, nil, slotErr
	}
	if run.Ended != "" {
		return nil, nil, fmt.Errorf("the experiment's load ended early: %s", run.Ended)
	}
	got := make([]keptReply, len(vs))
	for i, v := range vs {
		ev := report.ExperimentVariant{Name: v.name, ShouldMatter: v.shouldMatter, Request: vl.request(i), SlotRequests: requests[i],
			DurationS: float64(len(profiles[i])) * slotLength.Seconds()}
		for _, n := range requests[i] {
			ev.Requests += n
		}
		for _, prof := range profiles[i] {
			ev.CPUSeconds += time.Duration(cpuOf(prof, nil)).Seconds()
		}
		switch {
		case vl.missing[i].Load():
			ev.Error = "the microload's sessions sent no request of key " + v.key
		case len(profiles[i]) == 0:
			ev.Error = "no CPU profile"
		case ev.Requests == 0:
			ev.Error = "no request was sent"
		}
		for _, dg := range run.Digests {
			if dg.Key == v.keyOf() {
				ev.ReplyDigest, ev.DistinctReplies = fmt.Sprintf("%016x", dg.Top), dg.Distinct
				if len(dg.Bodies) > 0 {
					ev.StableDigest = stableDigest(dg.Bodies[0])
				}
				got[i] = keptOf(dg)
			}
		}
		e.Variants = append(e.Variants, ev)
	}
	return profiles, got, nil
}

// pprofClient fetches the experiment's CPU profiles: a 3xx is refused,
// not followed (lib/redirect).
var pprofClient = &http.Client{CheckRedirect: redirect.Refuse("the pprof fetch")}

// fetchCPUProfile is a CPU profile of the target's next d, read within
// the main run's limit.
func fetchCPUProfile(ctx context.Context, o *probes.ProfileOptions, d time.Duration) (*profile.Profile, error) {
	u := o.PprofURL.JoinPath("profile")
	u.RawQuery = fmt.Sprintf("seconds=%d", int(d.Seconds()))
	ctx, cancel := context.WithTimeout(ctx, d+20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	resp, err := pprofClient.Do(req)
	if e := redirect.As(err); e != nil {
		return nil, fmt.Errorf("%s: %w", u.Path, e)
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: status %d", u.Path, resp.StatusCode)
	}
	prof, _, _, err := pprofio.Read(resp.Body, o.MaxProfile) // invalid samples dropped
	return prof, err
}

// markReplies sets each variant's SameReply: same-key's against the main
// run's reply to the key, the others against same-key's.
func markReplies(e *report.Experiment, run *probes.Run, key string) {
	ref := ""
	for _, d := range run.Digests {
		if d.Key == key && len(d.Bodies) > 0 {
			ref = stableDigest(d.Bodies[0])
		}
	}
	for i := range e.Variants {
		v := &e.Variants[i]
		if i > 0 {
			ref = e.Variants[0].StableDigest
		}
		v.SameReply = v.StableDigest != "" && v.StableDigest == ref
	}
}

// volatile are the fragments of a reply that differ between two replies
// of the same work: nonces and ids (long hex or digit runs), timestamps.
var volatile = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?|[0-9a-fA-F]{16,}|[0-9a-fA-F-]{32,}|\d{9,}`)

// stableDigest is the digest of a reply with its volatile fragments masked.
func stableDigest(body []byte) string {
	h := fnv.New64a()
	h.Write(volatile.ReplaceAll(body, []byte("\x00")))
	return fmt.Sprintf("%016x", h.Sum64())
}

// judgeFinding measures the finding's work (its innermost frame) and its
// own frame in each variant's profile, and says what they show.
// reads, when set, says why the work may be reading the request.
// overReply: the finding's rule works over the reply's own bytes.
// replies is what the replies say of the input.
func judgeFinding(f analyzers.Finding, vs []report.ExperimentVariant, profiles [][]*profile.Profile, reads string, overReply bool,
	replies replyEvidence) report.ExperimentFinding {
	ef := report.ExperimentFinding{Rule: f.Rule, ClassBefore: f.Class, Class: f.Class, Verdict: "inconclusive"}
	names := []string{f.Frames[0]}
	if f.OwnFrame != "" && f.OwnFrame != f.Frames[0] {
		names = append(names, f.OwnFrame)
	}
	for _, name := range names {
		fr := report.ExperimentFrame{Frame: name, CPUPerRequestMS: make([]float64, len(vs)), Samples: make([]int, len(vs)),
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
	ef.Class, ef.Verdict, ef.Tolerance, ef.Why = verdict(f.Class, ef.Frames[0], vs, reads, overReply, replies)
	if sp := slotSpread(ef.Frames[0], vs); sp.Measured() {
		ef.SlotNoise = sp.RelSD
	}
	return ef
}

// verdict is the class the experiment's figures of the work support;
// reads says why the work may read the request ("": no sign of it);
// overReply, that the work is over the reply's own bytes (compressing,
// encoding it), whose cost says how big a reply is, not whether it is the
// same one; replies, what the replies say of the input: another input
// that got another answer makes the work a function of the input, at most
// cacheable, however steady its cost.
func verdict(class string, work report.ExperimentFrame, vs []report.ExperimentVariant, reads string, overReply bool,
	replies replyEvidence) (string, string, float64, string) {
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
			parts = append(parts, fmt.Sprintf("%s %.3f ms (%d samples, %d requests, %s)", v.Name, work.CPUPerRequestMS[i], work.Samples[i], v.Requests, reply))
		}
		return "CPU per request of " + work.Frame + ": " + strings.Join(parts, "; ")
	}
	inconclusive := func(why string) (string, string, float64, string) {
		return class, "inconclusive", 0, why + "; the class stays " + class + ". " + figures()
	}
	if len(vs) == 0 || vs[0].Error != "" || work.Samples[0] < minWorkSamples {
		return inconclusive("the same request sent again gave too few samples of the work to compare")
	}
	if overReply {
		for _, v := range vs {
			if v.Error == "" && v.DistinctReplies > 1 {
				return inconclusive(fmt.Sprintf("%s's replies differed byte for byte (%d distinct), and the work is over the reply's bytes: it runs over bytes that change with every request, whatever it costs",
					v.Name, v.DistinctReplies))
			}
		}
	}
	if !vs[0].SameReply {
		return inconclusive("the same request sent again got another reply than in the main run (beyond nonces and timestamps)")
	}
	spread := slotSpread(work, vs)
	noisy := func(name string) string {
		return fmt.Sprintf("the work's CPU per request varied ±%.0f%% from one second to the next of the same variant (%d degrees of freedom), too noisy to tell a change of %s from the noise",
			100*spread.RelSD, spread.DF, name)
	}
	// compare is how far variant i's CPU per request is from base's, with
	// two bounds. stay is the widest change that counts as staying put:
	// minTolerance, or the sampling noise of n0 samples and of those
	// variant i would have had at base's CPU per request (a work that
	// vanishes is a change, not noise). margin is the change the seconds'
	// own noise explains, for baseN seconds' worth against variant i's (0:
	// not measured). A move must pass both; staying put needs the change
	// within stay and a margin narrow enough to have seen a move. The
	// noise widens what counts as a move, never what counts as staying.
	compare := func(base float64, n0 int, reqs int64, baseN float64, i int) (change, stay, margin float64) {
		expected := math.Max(1, float64(n0)*float64(vs[i].Requests)/float64(max(reqs, 1)))
		stay = math.Max(minTolerance, noiseSigmas*math.Sqrt(1/float64(n0)+1/expected))
		margin, _ = spread.Margin(slotConfidence, baseN, slotsWorth(vs[i]))
		return relativeChange(work.CPUPerRequestMS[i], base), stay, margin
	}
	// The controls are pooled into the base: same-key, and ignored-param
	// when the server did ignore it and its work stayed put.
	base, n0, reqs := work.CPUPerRequestMS[0], work.Samples[0], vs[0].Requests
	baseSlots := slotWeights(vs[0])
	stayTol, moveTol := minTolerance, math.Inf(1)
	var tested, movedBy, tooFew, tooNoisy []string
	// A control that moved is the machine's noise, measured: the input's
	// variants must then move more than twice as far to count, and
	// input-independence cannot be claimed at all.
	controlMoved, controlNoisy, noise := "", "", 0.0
	for i := 1; i < len(vs); i++ {
		v := vs[i]
		if v.Error != "" || v.ShouldMatter || !v.SameReply {
			continue
		}
		change, stay, margin := compare(work.CPUPerRequestMS[0], work.Samples[0], vs[0].Requests, slotsWorth(vs[0]), i)
		switch {
		case stay > maxTolerance || math.IsNaN(change):
			return inconclusive(fmt.Sprintf("%s gave too few samples of the work to compare", v.Name))
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
		base = (base*float64(reqs) + work.CPUPerRequestMS[i]*float64(v.Requests)) / float64(reqs+v.Requests)
		n0, reqs = n0+work.Samples[i], reqs+v.Requests
		baseSlots = append(baseSlots, slotWeights(v)...)
	}
	for i := 1; i < len(vs); i++ {
		v := vs[i]
		// A parameter the server does not ignore is an input that
		// matters; one whose reply was not kept is neither.
		if v.Error != "" || !v.ShouldMatter && (v.SameReply || v.StableDigest == "") {
			continue
		}
		change, stay, margin := compare(base, n0, reqs, stats.EffectiveN(baseSlots), i)
		move := math.Max(math.Max(stay, margin), 2*noise)
		switch {
		case math.IsNaN(change):
			tooFew = append(tooFew, v.Name)
		case change > move:
			movedBy = append(movedBy, v.Name)
			moveTol = math.Min(moveTol, move) // every move passed it
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
		return inconclusive(fmt.Sprintf("the work's CPU per request moved in %s, a change that should not matter: too noisy to tell", controlMoved))
	}
	if len(movedBy) == 0 && len(tooNoisy) > 0 {
		return inconclusive(noisy(strings.Join(tooNoisy, ", ")))
	}
	if len(movedBy) == 0 && len(tooFew) > 0 {
		return inconclusive(fmt.Sprintf("%s gave too few samples of the work to compare", strings.Join(tooFew, ", ")))
	}
	if len(movedBy) > 0 {
		also := ""
		if controlMoved != "" {
			also = fmt.Sprintf(", twice the %.0f%% that %s, a change that should not matter, moved", 100*noise, controlMoved)
		}
		return "cacheable", "moves-with-input", moveTol, fmt.Sprintf("%s: the work's CPU per request moved with the request's input (%s, beyond ±%.0f%%%s), so it is a function of the input: it can be memoised per input, not moved to load time. %s",
			experimentName, strings.Join(movedBy, ", "), 100*moveTol, also, figures())
	}
	if reads != "" {
		return inconclusive(reads)
	}
	if len(tested) == 0 {
		return inconclusive("no other key of the endpoint could be sent, so the input was never varied")
	}
	if overReply {
		for i, v := range vs {
			// The bytes themselves, not the digest with nonces masked.
			if i > 0 && v.Error == "" && (!v.SameReply || v.ReplyDigest != vs[0].ReplyDigest) {
				return inconclusive(fmt.Sprintf("the work is over the reply's bytes and %s got other bytes: a steady cost says its replies cost alike to make, not that they are one piece of work (memoise it per key, or serve each reply precompressed, if the keys are few)", v.Name))
			}
		}
	}
	if replies.answered != "" {
		// Equal cost is not input independence: a sort of each user's
		// own list of one size costs the same for every user.
		return "cacheable", "replies-with-input", stayTol, fmt.Sprintf("%s: the work's CPU per request stayed within ±%.0f%% when the input changed (%s), but %s; "+
			"a steady cost says the inputs cost alike, not that the result is one, so probe claims it can be memoised per input, never moved to load time. %s",
			experimentName, 100*stayTol, strings.Join(tested, ", "), replies.answered, figures())
	}
	echoed := ""
	if replies.echoed {
		echoed = " (other inputs' replies differed only where they quote the request, or in nonces and timestamps)"
	}
	return "load-time", "input-independent", stayTol, fmt.Sprintf("%s: the work's CPU per request stayed within ±%.0f%% when the input changed (%s) and the same request got the same reply%s, so the work does not depend on the request. %s",
		experimentName, 100*stayTol, strings.Join(tested, ", "), echoed, figures())
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

// slotSpread is the noise of the work's CPU per request from one second
// to the next within each variant that ran with samples enough of the
// work (a thin one's seconds are mostly sampling noise of its own),
// pooled (stats.PooledSpread); a second of no requests is left out.
func slotSpread(work report.ExperimentFrame, vs []report.ExperimentVariant) stats.Spread {
	var groups [][]float64
	for i, v := range vs {
		if v.Error != "" || i >= len(work.SlotCPUPerRequestMS) || work.Samples[i] < minWorkSamples {
			continue
		}
		var g []float64
		for k, x := range work.SlotCPUPerRequestMS[i] {
			if k < len(v.SlotRequests) && v.SlotRequests[k] > 0 {
				g = append(g, x)
			}
		}
		groups = append(groups, g)
	}
	return stats.PooledSpread(groups)
}

// slotWeights are the variant's seconds' requests, each second's weight
// in the variant's CPU per request.
func slotWeights(v report.ExperimentVariant) []float64 {
	w := make([]float64, len(v.SlotRequests))
	for k, n := range v.SlotRequests {
		w[k] = float64(n)
	}
	return w
}

// slotsWorth is how many equal seconds the variant's are worth.
func slotsWorth(v report.ExperimentVariant) float64 { return stats.EffectiveN(slotWeights(v)) }

// applyVerdict sets the finding's class, evidence and fix from the
// experiment; rule is the finding's rule (nil: not in the catalog).
func applyVerdict(f *analyzers.Finding, ef report.ExperimentFinding, rule *Rule) {
	switch ef.Verdict {
	case "input-independent":
		f.Class = "load-time"
		f.Evidence += "; " + ef.Why
		f.Suggestion = "Its cost did not move with the request: do this work once, at start-up or when the data it reads changes, and reuse the result."
		if rule != nil && rule.Suggestion != "" {
			f.Suggestion = "Its cost did not move with the request. " + rule.Suggestion
		}
	case "moves-with-input":
		f.Class = "cacheable"
		f.Evidence += "; " + ef.Why
		f.Suggestion = "Memoise this work per input (keyed by what the request varies) and reuse it until the data changes; its cost moves with the request, so it cannot move to load time."
	case "replies-with-input":
		f.Class = "cacheable"
		f.Evidence += "; " + ef.Why
		f.Suggestion = "Memoise this work per input (keyed by what the request varies) and reuse it until the data changes; another input gets another result, so it cannot move to load time unless the inputs are few and known."
	default:
		f.Evidence += "; " + experimentName + " was inconclusive (see the report's experiment)"
	}
}

// ruleOf is the rule of id, or nil.
func ruleOf(rules []Rule, id string) *Rule {
	for i := range rules {
		if rules[i].ID == id {
			return &rules[i]
		}
	}
	return nil
}

// work is one function's CPU in a profile.
type work struct {
	nanos        int64
	samples      int
	readsRequest bool // a request reader or form parser ran below it
}

// requestReaders are functions that read the request as a handler runs.
var requestReaders = regexp.MustCompile(`^net/http\.\(\*body\)\.Read|^net/http\.\(\*Request\)\.(ParseForm|ParseMultipartForm|FormValue|PostFormValue|MultipartReader)|^net/http\.\(\*http2requestBody\)\.Read|^mime/multipart\.`)

// workOf is the CPU of the samples with fn (a display name) on their stack.
func workOf(p *profile.Profile, fn string) work {
	var w work
	idx := cpuIndex(p)
	for _, s := range p.Sample {
		at := -1
		reads, assist := false, false
		for li, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				name := frames.DisplayName(line.Function.Name)
				if at < 0 && requestReaders.MatchString(name) {
					reads = true
				}
				if at < 0 && strings.HasPrefix(name, "runtime.gcAssistAlloc") {
					assist = true
				}
				if name == fn && at < 0 {
					at = li
				}
			}
		}
		// GC assists are the collector's work, charged to whatever
		// allocates when it runs behind: noise to a comparison of work.
		if at >= 0 && !assist {
			w.nanos += s.Value[idx]
			w.samples++
			w.readsRequest = w.readsRequest || reads
		}
	}
	return w
}

// cpuOf is the CPU nanoseconds of p's samples (all of them when keep is nil).
func cpuOf(p *profile.Profile, keep func(*profile.Sample) bool) int64 {
	idx := cpuIndex(p)
	var n int64
	for _, s := range p.Sample {
		if keep == nil || keep(s) {
			n += s.Value[idx]
		}
	}
	return n
}

func cpuIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			return i
		}
	}
	return len(p.SampleType) - 1
}

// variantLoad is ml with every session sending the current variant's
// request: the variant's key's call as the microload's own session builds
// it (with its headers and session state), altered by the variant.
type variantLoad struct {
	ml      probes.Microload
	vs      []requestVariant
	current atomic.Int32
	sent    []atomic.Int64 // requests sent per variant
	missing []atomic.Bool  // a session had no call of the variant's key
	mu      sync.Mutex
	shown   []string // each variant's request as the first session built it
}

func newVariantLoad(ml probes.Microload, vs []requestVariant) *variantLoad {
	return &variantLoad{ml: ml, vs: vs, sent: make([]atomic.Int64, len(vs)), missing: make([]atomic.Bool, len(vs)), shown: make([]string, len(vs))}
}

func (l *variantLoad) Name() string { return l.ml.Name() + " (" + experimentName + ")" }

func (l *variantLoad) Prepare(ctx context.Context, t *probes.Target, c *probes.Client) error {
	return l.ml.Prepare(ctx, t, c)
}

func (l *variantLoad) NewSession(ctx context.Context, c *probes.Client, id int) (probes.Session, error) {
	s, err := l.ml.NewSession(ctx, c, id)
	if err != nil {
		return nil, err
	}
	calls := make([]probes.Call, len(l.vs))
	found := make([]bool, len(l.vs))
	for j := 0; j < maxScannedCalls && slices.Contains(found, false); j++ {
		call := s.Next(j)
		for i, v := range l.vs {
			if found[i] || call.Key != v.key {
				continue
			}
			vc := call
			if v.alter != nil {
				vc.Req = v.alter(call.Req)
			}
			vc.Key = v.keyOf()
			calls[i], found[i] = vc, true
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, ok := range found {
		if !ok {
			l.missing[i].Store(true)
			calls[i] = calls[0] // sent, but not counted as the variant's
			continue
		}
		if l.shown[i] == "" {
			l.shown[i] = calls[i].Req.Method + " " + calls[i].Req.Path
		}
	}
	if !found[0] {
		return nil, fmt.Errorf("the microload's first %d calls hold no request of key %q", maxScannedCalls, l.vs[0].key)
	}
	return &variantSession{l: l, calls: calls, found: found}, nil
}

func (l *variantLoad) request(i int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown[i] != "" {
		return l.shown[i]
	}
	return l.vs[i].key
}

// variantSession sends the current variant's call.
type variantSession struct {
	l     *variantLoad
	calls []probes.Call
	found []bool
}

func (s *variantSession) Next(int) probes.Call {
	i := int(s.l.current.Load())
	if s.found[i] {
		s.l.sent[i].Add(1)
	}
	return s.calls[i]
}
