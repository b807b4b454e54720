package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probehq/probe/result"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers/verdict"
	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/target"
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
	minVariants     = 3 // same-key, the control and an other key: fewer compare nothing
	optionalSlots   = 3 // seconds a variant the budget must leave each for an optional variant to run
	variantWarmup   = 300 * time.Millisecond
	variantOverhead = 700 * time.Millisecond // Prepare, the profiles' fetches, the end of the run
	maxScannedCalls = 4096                   // calls of a session looked through for a variant's key
	experimentName  = verdict.Name
)

// WithExperiment is p running the experiment within budget after each
// profiled Measure whose findings rest on thin evidence (budget 0: never).
func (p *Pipeline) WithExperiment(budget time.Duration) *Pipeline {
	q := *p
	q.o.Experiment = budget
	return &q
}

// experiment runs the variants of run's busiest key and reclassifies the
// eligible findings of a by what they showed.
func (p *Pipeline) experiment(ctx context.Context, ml probes.Microload, t *probes.Target, o probes.LoadOptions, run *result.Run,
	a report.Analysis) report.Analysis {
	var eligible []int
	for i, f := range a.Findings {
		switch {
		case !verdict.Eligible(f):
		case verdict.OverVaryingReplies(ruleOf(p.o.Rules, f.Rule), run):
			a.Findings[i].Evidence += "; " + experimentName + " was not run on it: a request key's replies differed byte for " +
				"byte, and this work is over the reply's bytes, so it runs over bytes that change per request whatever it costs"
		default:
			eligible = append(eligible, i)
		}
	}
	if len(eligible) == 0 || o.Profile == nil || run.Profiles == nil || run.Ended != "" {
		return a
	}
	e := &report.Experiment{Endpoint: endpoints(run), BudgetS: p.o.Experiment.Seconds()}
	a.Experiment = e
	base, others := verdict.Keys(run)
	if base == nil {
		e.Skipped = "the run kept no reply key of the endpoint to send again"
		return a
	}
	variants := requestVariants(base, others, base.GRPC)
	window := p.o.Experiment - variantWarmup - variantOverhead
	slots := int(window / (slotLength + slotGap))
	if slots < minVariants {
		e.Skipped = fmt.Sprintf("--experiment-time %s leaves less than a second of profile to each of %d variants", p.o.Experiment, minVariants)
		return a
	}
	// other-header on a request that asks for no language varies no input
	// the claim needs (it can only show a dependence): it runs only when
	// the budget leaves every variant three seconds, so that it takes no
	// seconds the needed variants' comparison rests on.
	if !slices.ContainsFunc(base.Headers, func(n string) bool { return strings.EqualFold(n, "Accept-Language") }) &&
		slots < optionalSlots*len(variants) {
		variants = slices.DeleteFunc(variants, func(v requestVariant) bool { return v.name == "other-header" })
	}
	// The variants past the budget's seconds are left out, said so: the
	// inputs only they vary stay unvaried.
	var left []requestVariant
	if len(variants) > slots {
		variants, left = variants[:slots], variants[slots:]
	}
	if o.Rate == 0 {
		o.Concurrency = verdict.Clients(run, o.Concurrency)
		e.Clients = o.Concurrency
	}
	began := time.Now()
	profiles, got, err := p.runVariants(ctx, ml, t, o, run, variants, window, slots, e)
	e.TookS = time.Since(began).Seconds()
	if err != nil {
		e.Skipped = err.Error()
		return a
	}
	for _, v := range left {
		e.Variants = append(e.Variants, report.ExperimentVariant{Name: v.name, ShouldMatter: v.shouldMatter, Request: v.key, Varies: v.varies,
			Error: fmt.Sprintf("not run: --experiment-time %s leaves a profiled second to %d variants", p.o.Experiment, slots)})
		profiles = append(profiles, nil)
		got = append(got, verdict.Kept{})
	}
	verdict.MarkReplies(e, run, base.Key)
	replies := verdict.ReadInputReplies(run, base, e.Variants, got)
	replies.Inputs, replies.NoInput = requestInputs(base), withoutInput(base)
	replies.InFlight = o.Concurrency
	for _, i := range eligible {
		f := &a.Findings[i]
		rule := ruleOf(p.o.Rules, f.Rule)
		reads := ""
		if base.BodyBytes > 0 && rule != nil && rule.Input {
			reads = "the requests carry bodies and the work may be decoding them: same-shaped bodies cost alike, so a steady CPU " +
				"per request proves nothing"
		}
		ef := verdict.Judge(*f, e.Variants, profiles, reads, rule != nil && rule.OverReplyBytes(), replies)
		e.Findings = append(e.Findings, ef)
		verdict.Apply(f, ef, rule)
	}
	return a
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
func (p *Pipeline) runVariants(ctx context.Context, ml probes.Microload, t *probes.Target, o probes.LoadOptions, run0 *result.Run,
	vs []requestVariant, window time.Duration, slotCount int, e *report.Experiment) ([][]*profile.Profile, []verdict.Kept, error) {
	vl := newVariantLoad(ml, vs)
	slots := make([][]verdict.Slot, len(vs))
	pid := 0
	if run0 != nil && run0.TargetProc != nil {
		pid = run0.TargetProc.PID
	} else if _, err := target.FindListener(t.Addr()); errors.Is(err, target.ErrOwnProcess) {
		pid = os.Getpid() // a server in probe's process: the others are the rest
	}
	var slotErr error
	vo := o
	vo.Duration, vo.Warmup, vo.RequestTimes, vo.Profile, vo.Progress = window, variantWarmup, false, nil, nil
	if p.o.UI != nil {
		vo.Progress = func(pr probes.Progress) { p.o.UI.Progress("experiment", pr) }
	}
	vo.During = func(ctx context.Context) {
		for k := range slotCount {
			i := k % len(vs)
			vl.current.Store(int32(i))
			// The requests of the profile's second, counted when it ends,
			// not when the profile has been written and read back.
			before := vl.sent[i].Load()
			var counted atomic.Int64
			var busy atomic.Uint64 // float64 bits, stored before counted
			counted.Store(-1)
			ow := target.OpenOthers(pid)
			seen := func() {
				c, ok := ow.Cores()
				if !ok {
					c = -1 // not seen
				}
				busy.Store(math.Float64bits(c))
			}
			timer := time.AfterFunc(slotLength, func() { seen(); counted.Store(vl.sent[i].Load() - before) })
			prof, err := fetchCPUProfile(ctx, o.Profile, slotLength)
			timer.Stop()
			if ctx.Err() != nil {
				return // the window ended inside this slot: its profile is cut
			}
			if err != nil {
				slotErr = fmt.Errorf("the experiment's CPU profile of slot %d: %v", k+1, err)
				return
			}
			sent := counted.Load()
			if sent < 0 { // the profile came back early
				seen()
				sent = vl.sent[i].Load() - before
			}
			slots[i] = append(slots[i], verdict.Slot{Profile: prof, Requests: sent, Others: math.Float64frombits(busy.Load()),
				Round: k / len(vs)})
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
	left := verdict.LeaveOutBusySeconds(slots)
	got := make([]verdict.Kept, len(vs))
	profiles := make([][]*profile.Profile, len(vs))
	for i, v := range vs {
		ev := report.ExperimentVariant{Name: v.name, ShouldMatter: v.shouldMatter, Request: vl.request(i), Varies: v.varies,
			BusySecondsLeftOut: left[i], DurationS: float64(len(slots[i])) * slotLength.Seconds()}
		seen := true
		for _, s := range slots[i] {
			profiles[i] = append(profiles[i], s.Profile)
			ev.SlotRequests, ev.SlotRounds = append(ev.SlotRequests, s.Requests), append(ev.SlotRounds, s.Round)
			ev.SlotOthersCores = append(ev.SlotOthersCores, s.Others)
			ev.Requests += s.Requests
			ev.CPUSeconds += time.Duration(verdict.CPUOf(s.Profile, nil)).Seconds()
			seen = seen && s.Others >= 0
		}
		if !seen {
			ev.SlotOthersCores = nil
		}
		ev.Calls, ev.Errors = variantCalls(run, vl.op(i))
		switch {
		case vl.unsent[i].Load():
			ev.Error = "not sent: the request cannot be varied this way (a gRPC body of no single uncompressed message, a body " +
				"that is no JSON object)"
		case vl.missing[i].Load():
			ev.Error = "the microload's sessions sent no request of key " + v.key
		case ev.Errors > 0:
			// A variant whose requests failed measured the server's
			// refusal, not its work: void, its errors shown.
			ev.Error = fmt.Sprintf("void: %d of its %d calls got errors (%s), and void evidence is no evidence", ev.Errors,
				ev.Calls, variantReasons(run, vl.op(i)))
		case len(slots[i]) == 0:
			ev.Error = "no CPU profile"
		case ev.Requests == 0:
			ev.Error = "no request was sent"
		}
		for _, dg := range run.Digests {
			if dg.Key == v.keyOf() {
				ev.ReplyDigest, ev.DistinctReplies = fmt.Sprintf("%016x", dg.Top), dg.Distinct
				if len(dg.Bodies) > 0 {
					ev.StableDigest = verdict.StableDigest(dg.Bodies[0])
				}
				got[i] = verdict.KeptOf(dg)
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
func fetchCPUProfile(ctx context.Context, o *target.ProfileOptions, d time.Duration) (*profile.Profile, error) {
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

// ruleOf is the rule of id, or nil.
func ruleOf(rules []Rule, id string) *Rule {
	for i := range rules {
		if rules[i].ID == id {
			return &rules[i]
		}
	}
	return nil
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
	unsent  []atomic.Bool  // the variant's alteration could not be made of the call
	mu      sync.Mutex
	shown   []string // each variant's request as the first session built it
	ops     []string // each variant's operation, as the first session named it
}

func newVariantLoad(ml probes.Microload, vs []requestVariant) *variantLoad {
	return &variantLoad{ml: ml, vs: vs, sent: make([]atomic.Int64, len(vs)), missing: make([]atomic.Bool, len(vs)),
		unsent: make([]atomic.Bool, len(vs)), shown: make([]string, len(vs)), ops: make([]string, len(vs))}
}

// op is variant i's operation ("": none of its calls was made).
func (l *variantLoad) op(i int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ops[i]
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
			found[i] = true
			if v.alter != nil {
				if vc.Req = v.alter(call.Req); vc.Req == nil {
					l.unsent[i].Store(true)
					found[i] = false
					continue
				}
			}
			vc.Key, vc.Op = v.keyOf(), v.opOf(call.Op)
			if v.jsonRPC {
				vc.Check = refusedRPC(call.Check)
			}
			calls[i] = vc
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, ok := range found {
		if !ok {
			if !l.unsent[i].Load() {
				l.missing[i].Store(true)
			}
			calls[i] = calls[0] // sent, but not counted as the variant's
			continue
		}
		if l.shown[i] == "" {
			l.shown[i], l.ops[i] = shownRequest(l.vs[i], calls[i].Req), calls[i].Op
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
