// Package verification is --verify's runs: each load-time or cacheable
// finding's hot site rewritten in the source (package verify), the variant
// built and measured against the original in alternating rounds, and their
// replies compared.
package verification

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/analyzers/verdict"
	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/lib/stats"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/pipeline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
	"github.com/probehq/probe/verify"
)

// Plan is what --verify needs beyond the run: the source, how either
// side is built and started, and the microload to measure them on.
type Plan struct {
	Dir      string            // the source folder (--src)
	Original *pipeline.Version // the source as it is, started afresh for the rounds
	// Variant builds the source with a go build -overlay file; its error is
	// one line (a *verify.BuildError for a compile error).
	Variant   func(ctx context.Context, overlay string) (v *pipeline.Version, remove func(), err error)
	Microload func() probes.Microload // a fresh copy of the run's microload
	Target    func(u *url.URL, child *target.Child) *probes.Target
	Options   probes.LoadOptions // the run's own: each round is one run of its --duration
	Rounds    int                // per side
	Calls     int                // requests whose replies are compared
	Say       func(string)
}

// runner is the pipeline the rounds are measured by.
type runner struct{ *pipeline.Pipeline }

// verifiable are the classes whose work a variant can do once.
var verifiable = map[string]verify.Class{"load-time": verify.LoadTime, "cacheable": verify.Cacheable}

// Run puts each load-time or cacheable finding of rep to the test: its
// hot site (from run's CPU profile) rewritten in the source, the variant
// built and measured against the original in alternating rounds, and their
// replies compared; the verifications go to rep (and each patch beside
// it). The original is stopped at the end.
func Run(ctx context.Context, pl *pipeline.Pipeline, rep *report.Run, run *result.Run, plan Plan) []report.Verification {
	defer plan.Original.Stop()
	q := runner{pl.WithExperiment(0)}
	plan.Options.Profile = nil
	rep.Verification = nil
	for i, f := range rep.Findings {
		class, ok := verifiable[f.Class]
		if !ok || ctx.Err() != nil {
			continue
		}
		v := report.Verification{Finding: f.Rule + "@" + f.OwnFrame, Class: f.Class, PredictedSaving: predicted(f, run)}
		if perRequest := q.verifyOne(ctx, &v, f, class, rep, run, plan); perRequest != "" {
			// The source computes the call's input on each request: the work
			// is not the same for every request, whatever the replies showed.
			verdict.Reclass(&rep.Findings[i], verdict.MadePerRequest,
				"--verify read the source: the call's input is made per request ("+perRequest+")", nil)
		}
		if plan.Say != nil {
			plan.Say(fmt.Sprintf("verify %s: %s%s", v.Finding, v.Verdict, whyTail(v.Why)))
		}
		rep.Verification = append(rep.Verification, v)
	}
	return rep.Verification
}

func whyTail(why string) string {
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}

// predicted is the finding's CPU per request as a share of the target
// process's whole CPU per request: its share of the profile's CPU, plus
// its part of the collector's background work (the collector runs as
// often as the heap grows, so work that allocates a share of the bytes
// costs that share of it), plus its samples cut at the profiler's depth
// (analyzers.CutShare). A share of the profile's CPU is taken as that
// share of the process's: what the profiler does not see of it (5–10 %
// on a busy server) is not scaled out as if none of it were the
// finding's, which made every prediction short of what was measured
// (docs/FIELD.md, [stop45]).
func predicted(f analyzers.Finding, run *result.Run) float64 {
	share := f.CPUShare
	if run.Profiles == nil {
		return min(1, share)
	}
	if f.AllocShare > 0 {
		share += f.AllocShare * analyzers.BackgroundGC(run.Profiles.CPU)
	}
	// A recursion under the hot site (a compiler, a parser) is cut at the
	// profiler's depth on its deep samples, which the share cannot see.
	callees := make([]string, len(f.Callees))
	for i, c := range f.Callees {
		callees[i] = c.Function
	}
	share += analyzers.CutShare(run.Profiles.CPU, f.OwnFrame, callees...)
	return min(1, share)
}

// verifyOne fills v. For a load-time finding whose call the source shows
// taking an input made per request, it returns why: the claim is then
// cacheable, and the variant measured is the memo by that input.
func (p runner) verifyOne(ctx context.Context, v *report.Verification, f analyzers.Finding, class verify.Class, rep *report.Run,
	run *result.Run, plan Plan) (perRequest string) {
	v.Verdict = report.NotBuilt
	if run.Profiles == nil || run.Profiles.CPU == nil {
		v.Why = "the run has no CPU profile to find the hot site in"
		return ""
	}
	if f.OwnFrame == "" {
		v.Why = "the finding names no function of the target's own to rewrite"
		return ""
	}
	site, ok := HotSite(run.Profiles.CPU, f)
	if !ok {
		v.Why = "no sample under " + f.OwnFrame + " in the CPU profile calls from the target's own code into a library"
		return ""
	}
	variant, err := verify.Rewrite(plan.Dir, site, class)
	var nr *verify.NotRewritable
	if class == verify.LoadTime && errors.As(err, &nr) && nr.PerCall() {
		perRequest = textline.Of(nr.Why, textline.Max)
		v.Claimed, v.Class = v.Class, "cacheable"
		memo, merr := verify.Rewrite(plan.Dir, site, verify.Cacheable)
		if merr == nil {
			variant, err = memo, nil
		} else if errors.As(merr, &nr) {
			err = fmt.Errorf("not load-time: %s; no memo by it either: %s", perRequest, nr.Why)
		}
	}
	if err != nil {
		v.Why = err.Error()
		if errors.As(err, &nr) {
			v.Why = nr.Why
		}
		v.Why = textline.Of(v.Why, textline.Max)
		return perRequest
	}
	defer func() {
		if perRequest != "" && v.Why == "" {
			v.Why = textline.Of("not load-time: "+perRequest+"; the memo by it saves this while the inputs repeat", textline.Max)
		}
	}()
	v.Form, v.Call = string(variant.Form), textline.Of(variant.Call, textline.Max)
	v.Site = fmt.Sprintf("%s:%d", filepath.Base(variant.Frame.File), variant.Frame.Line)
	if patch, err := variant.Patch(); err == nil {
		v.Patch = fmt.Sprintf("verify/%d.diff", len(rep.Verification)+1)
		rep.AttachFile(v.Patch, []byte(patch))
	}
	tmp, err := os.MkdirTemp("", "probe-verify-")
	if err != nil {
		v.Why = err.Error()
		return perRequest
	}
	defer os.RemoveAll(tmp)
	overlay, err := variant.WriteOverlay(tmp)
	if err != nil {
		v.Why = err.Error()
		return perRequest
	}
	if plan.Say != nil {
		plan.Say(fmt.Sprintf("verify %s: building the variant (%s of %s)", v.Finding, variant.Form, v.Call))
	}
	after, remove, err := plan.Variant(ctx, overlay)
	if err != nil {
		v.Why = textline.Of(err.Error(), textline.Max)
		return perRequest
	}
	defer remove()
	defer after.Stop()
	p.measureVariant(ctx, v, plan, after)
	if variant.ReceiverOf != "" { // a part of the finding's work: a saving far off is that part's, not the share's
		part := "the variant did once only the making of the value `" + variant.ReceiverOf + "` is a method on"
		switch {
		case v.Verdict == report.Confirmed && farFromPrediction(v):
			v.Why = fmt.Sprintf("the saving is far from the prediction (%.0f%% against %.0f%%): %s", 100**v.MeasuredSaving,
				100*v.PredictedSaving, part)
		case v.Why == "":
			v.Why = part
		default:
			v.Why += "; " + part
		}
		v.Why = textline.Of(v.Why, textline.Max)
	}
	return perRequest
}

// measureVariant compares the replies, then runs the rounds, and judges.
func (p runner) measureVariant(ctx context.Context, v *report.Verification, plan Plan, after *pipeline.Version) {
	v.Verdict = report.Inconclusive
	for _, side := range []*pipeline.Version{plan.Original, after} {
		if err := side.Ensure(ctx); err != nil {
			v.Why = textline.Of("the "+side.Label+" does not start: "+err.Error(), textline.Max)
			if side == after {
				v.Verdict = report.Refuted
			}
			return
		}
	}
	same, why, err := p.sameReplies(ctx, plan, after)
	var vf variantFailed
	switch {
	case err != nil && ctx.Err() == nil && errors.As(err, &vf):
		// The original answered every call twice; the variant did not.
		v.Verdict = report.Refuted
		v.Why = textline.Of("comparing replies: the original answered, "+err.Error(), textline.Max)
		return
	case err != nil:
		v.Why = textline.Of("comparing replies: "+err.Error(), textline.Max)
		return
	case same != nil:
		v.RepliesSame = same
	}
	var cpu [2][]float64
	var failed, made [2]int
	for round := 1; round <= plan.Rounds && ctx.Err() == nil; round++ {
		for i, side := range []*pipeline.Version{plan.Original, after} {
			r, err := p.verifyRound(ctx, plan, side, fmt.Sprintf("verify %d/%d %s", round, plan.Rounds, side.Label))
			if err == nil && i == 1 {
				err = moreFailed(r, failed[0], made[0])
			}
			if err != nil {
				v.Why = textline.Of(fmt.Sprintf("round %d, the %s: %v", round, side.Label, err), textline.Max)
				if side == after {
					v.Verdict = report.Refuted
				}
				return
			}
			cpu[i] = append(cpu[i], r.cpuPerRequest)
			failed[i], made[i] = failed[i]+r.failed, made[i]+r.requests
			v.Rounds++
		}
	}
	if len(cpu[0]) == 0 || len(cpu[1]) == 0 {
		v.Why = "interrupted before a round was measured"
		return
	}
	judge(v, cpu[0], cpu[1], why)
}

// judge sets the verdict from the rounds' CPU per request of each side. The
// interval of the saving takes every variant round against every original
// round: it excludes zero when every variant round was cheaper than every
// original one (with 3 rounds a side, a 1-in-20 chance if nothing changed).
func judge(v *report.Verification, orig, variant []float64, repliesWhy string) {
	saving := 1 - stats.Median(variant)/stats.Median(orig)
	lo := 1 - slices.Max(variant)/slices.Min(orig)
	hi := 1 - slices.Min(variant)/slices.Max(orig)
	v.MeasuredSaving, v.Interval = &saving, &report.Interval{lo, hi}
	switch {
	case v.RepliesSame != nil && !*v.RepliesSame:
		v.Verdict, v.Why = report.Refuted, repliesWhy
	case saving <= 0:
		v.Verdict, v.Why = report.Refuted, fmt.Sprintf("no saving: the variant spent %.0f%% of the original's CPU per request",
			100*(1-saving))
	case lo <= 0:
		v.Verdict, v.Why = report.Inconclusive, "the rounds overlap: the saving's interval reaches zero (a longer --duration "+
			"gives longer rounds)"
	case v.RepliesSame == nil:
		v.Verdict, v.Why = report.Inconclusive, repliesWhy
	default:
		v.Verdict = report.Confirmed
		if farFromPrediction(v) {
			v.Why = fmt.Sprintf("the saving is far from the prediction (%.0f%% against %.0f%%): the finding's share is the suspect",
				100*saving, 100*v.PredictedSaving)
		}
	}
}

// farFromPrediction says a measured saving is off its prediction by more
// than half of it.
func farFromPrediction(v *report.Verification) bool {
	return v.MeasuredSaving != nil && math.Abs(*v.MeasuredSaving-v.PredictedSaving) > 0.5*v.PredictedSaving
}

// round is one round's figures of a side.
type round struct {
	cpuPerRequest    float64 // CPU seconds of the process per request
	requests, failed int
}

// moreFailed says why the variant's round failed more of its requests
// than the original's rounds so far: a target that fails some requests
// by itself (a check its replies never pass) is measured all the same,
// but a variant must not fail more. Where the original failed none, any
// is more; else a share above the original's by more than 2 points and a
// tenth of it.
func moreFailed(r round, origFailed, origMade int) error {
	if r.failed == 0 || r.requests == 0 {
		return nil
	}
	orig := 0.0
	if origMade > 0 {
		orig = float64(origFailed) / float64(origMade)
	}
	if share := float64(r.failed) / float64(r.requests); origFailed == 0 || share > 1.1*orig+0.02 {
		return fmt.Errorf("%d of %d requests failed (the original's rounds: %.1f%%)", r.failed, r.requests, 100*orig)
	}
	return nil
}

// verifyRound is one run of the microload on side. Failed requests are
// counted, not refused: the original may fail some by itself.
func (p runner) verifyRound(ctx context.Context, plan Plan, side *pipeline.Version, label string) (round, error) {
	if err := side.Ensure(ctx); err != nil {
		return round{}, err
	}
	u, _ := url.Parse(side.Child().URL)
	rep, r, err := p.Measure(ctx, label, plan.Microload(), plan.Target(u, side.Child()), plan.Options)
	switch {
	case err != nil:
		return round{}, err
	case r.Ended != "":
		return round{}, fmt.Errorf("the run ended early: %s", r.Ended)
	case rep.Latency.Requests == 0 || rep.Latency.Errors == rep.Latency.Requests:
		return round{}, fmt.Errorf("%d of %d requests failed", rep.Latency.Errors, rep.Latency.Requests)
	case rep.TargetProcess == nil || rep.TargetProcess.CPUSeconds <= 0:
		return round{}, errors.New("no CPU figure of the process")
	}
	return round{cpuPerRequest: rep.TargetProcess.CPUSeconds / float64(rep.Latency.Requests),
		requests: int(rep.Latency.Requests), failed: int(rep.Latency.Errors)}, nil
}

// sameReplies asks the original the same calls twice, then the variant
// once: a reply that differs between the original's two answers varies on
// its own (a nonce, map order) and is not held against the variant. same is
// nil when every reply varies.
func (p runner) sameReplies(ctx context.Context, plan Plan, after *pipeline.Version) (same *bool, why string, err error) {
	first, err := p.repliesOf(ctx, plan, plan.Original)
	if err != nil {
		return nil, "", err
	}
	again, err := p.repliesOf(ctx, plan, plan.Original)
	if err != nil {
		return nil, "", err
	}
	variant, err := p.repliesOf(ctx, plan, after)
	if err != nil {
		return nil, "", variantFailed{fmt.Errorf("the %s: %v", after.Label, err)}
	}
	compared := 0
	for i := range min(len(first), len(again), len(variant)) {
		if !first[i].equal(again[i]) || first[i].call != variant[i].call {
			continue
		}
		compared++
		if !first[i].equal(variant[i]) {
			no := false
			return &no, textline.Of(fmt.Sprintf("the reply to %s changed: %s", first[i].call, first[i].differs(variant[i])),
				textline.Max), nil
		}
	}
	if compared == 0 {
		return nil, "every reply varies on its own (the original answered the same request differently twice)", nil
	}
	yes := true
	return &yes, "", nil
}

// variantFailed is the variant's failure to answer a call the original
// answered.
type variantFailed struct{ error }

func (e variantFailed) Unwrap() error { return e.error }

type sampledReply struct {
	call   string // the operation and request key
	status int
	body   []byte
}

func (r sampledReply) equal(o sampledReply) bool {
	return r.status == o.status && bytes.Equal(r.body, o.body)
}

func (r sampledReply) differs(o sampledReply) string {
	if r.status != o.status {
		return fmt.Sprintf("status %d, the variant's %d", r.status, o.status)
	}
	return fmt.Sprintf("a body of %d bytes, the variant's of %d differs", len(r.body), len(o.body))
}

// repliesOf sends plan.Calls calls of one session of the microload to side,
// unmeasured, and keeps each reply whatever its status.
func (p runner) repliesOf(ctx context.Context, plan Plan, side *pipeline.Version) ([]sampledReply, error) {
	if err := side.Ensure(ctx); err != nil {
		return nil, err
	}
	u, _ := url.Parse(side.Child().URL)
	t := plan.Target(u, side.Child())
	c := probes.NewClient(t, max(plan.Options.Timeout, 10*time.Second))
	defer c.Close()
	ml := plan.Microload()
	if err := ml.Prepare(ctx, t, c); err != nil {
		return nil, err
	}
	s, err := ml.NewSession(ctx, c, 0)
	if err != nil {
		return nil, err
	}
	var out []sampledReply
	for i := range plan.Calls {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		call := s.Next(i)
		call.Check = func(*probes.Reply) error { return nil }
		r, err := c.Unmeasured(call)
		if err != nil {
			return nil, err
		}
		out = append(out, sampledReply{call: call.Op + " " + call.Key, status: r.Status, body: bytes.Clone(r.Body)})
	}
	return out, nil
}

// HotSite is the finding's site in the CPU profile: of the samples whose
// stack holds the finding's own frame (and its innermost library frame,
// when it names one), the site (verify.SiteOf) that holds the most CPU.
// When no sample holds both (a finding whose own frame is one caller of
// its work and whose leaf is under another), the frames of its chain
// outside the leaf's library are tried in its order.
func HotSite(p *profile.Profile, f analyzers.Finding) (verify.Site, bool) {
	own := f.OwnFrame
	if own == "" && len(f.Frames) > 0 {
		own = f.Frames[0]
	}
	var leaf string
	if len(f.Frames) > 1 && f.Frames[0] != own {
		leaf = f.Frames[0]
	}
	if site, ok := hotSite(p, own, leaf); ok || leaf == "" {
		return site, ok
	}
	for _, fr := range f.Frames[1:] {
		if fr == "…" || fr == own || frames.PkgPath(fr) == frames.PkgPath(leaf) {
			continue
		}
		if site, ok := hotSite(p, fr, leaf); ok {
			return site, true
		}
	}
	return verify.Site{}, false
}

func hotSite(p *profile.Profile, own, leaf string) (verify.Site, bool) {
	vi := len(p.SampleType) - 1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	type weighed struct {
		site verify.Site
		cpu  int64
	}
	sites := map[string]*weighed{}
	var best *weighed
	for _, s := range p.Sample {
		if !holds(s.Location, own) || leaf != "" && !holds(s.Location, leaf) {
			continue
		}
		site, ok := verify.SiteOf(s.Location, frames.Code{})
		if !ok || !slices.ContainsFunc(site.Frames, func(fr verify.Frame) bool { return fr.Func == own }) {
			continue
		}
		key := fmt.Sprintf("%s %s:%d", site.Callee, site.Frames[0].File, site.Frames[0].Line)
		w := sites[key]
		if w == nil {
			w = &weighed{site: site}
			sites[key] = w
		}
		w.cpu += s.Value[vi]
		if best == nil || w.cpu > best.cpu {
			best = w
		}
	}
	if best == nil {
		return verify.Site{}, false
	}
	return best.site, true
}

// holds says whether a stack holds fn, a name as a finding shows it: a
// generic function's type arguments elided ("[…]").
func holds(stack []*profile.Location, fn string) bool {
	for _, loc := range stack {
		for _, l := range loc.Line {
			if l.Function != nil && (l.Function.Name == fn || frames.DisplayName(l.Function.Name) == fn) {
				return true
			}
		}
	}
	return false
}
