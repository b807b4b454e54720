package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/report/abreport"
	"github.com/probehq/probe/target"
)

// Version is one side of a before/after comparison: how to start it, and
// the process while it runs.
type Version struct {
	Side  string // "before" or "after"
	Label string // how the report names it
	Start func(ctx context.Context) (*target.Child, error)

	child  *target.Child
	broken string // why it cannot run any more; empty while it can
	pprof  bool   // it serves /debug/pprof
}

// Child is v's process while it runs (nil before it starts).
func (v *Version) Child() *target.Child { return v.child }

// Ensure starts v if it is not running; a version that will not start is
// broken for the rest of the session.
func (v *Version) Ensure(ctx context.Context) error {
	if v.broken != "" {
		return errors.New(v.broken)
	}
	if v.child != nil {
		select {
		case <-v.child.Exited():
		default:
			return nil
		}
	}
	ch, err := v.Start(ctx)
	if err != nil {
		if ctx.Err() == nil {
			v.broken = "does not start: " + err.Error()
		}
		return err
	}
	v.child = ch
	u, _ := url.Parse(ch.URL)
	v.pprof = target.Open(ctx, target.Spec{URL: u, Child: ch, Pprof: u.JoinPath("/debug/pprof/")}).Pprof != nil
	return nil
}

// Stop stops v's process if it runs.
func (v *Version) Stop() {
	if v.child != nil {
		v.child.Stop()
	}
}

// ABPlan is what an A/B session measures, and how.
type ABPlan struct {
	Runs  int      // runs per side and microload
	Names []string // the microloads, in order
	// Microload makes a fresh microload of a name (checked before).
	Microload func(name string) probes.Microload
	// Target is how a running version is reached (headers, the child).
	Target func(u *url.URL, child *target.Child) *probes.Target
	// Options are the load's options against u; profiled when the
	// version serves /debug/pprof.
	Options func(u *url.URL, profiled bool) probes.LoadOptions
	Profile bool   // profiling was asked: a version without pprof is warned of
	Dir     string // each run's folder is Dir/runs/<microload>/<side>-<n>

	Settle time.Duration // the longest wait for a quiet version before a run (settle_ab.go); 0: none
}

// Interleave runs every microload on both versions, A B A B, plan.Runs
// times each, through Measure; writes each run's report folder, and
// compares the folders as probe compare does.
func (p *Pipeline) Interleave(ctx context.Context, a, b *Version, plan ABPlan) (*abreport.AB, error) {
	sides := [2]map[string][]*abreport.RunData{{}, {}}
	var failures []abreport.SideFailure
	quiet := abSettle{bound: plan.Settle}
	for run := 1; run <= plan.Runs && ctx.Err() == nil; run++ {
		for _, name := range plan.Names {
			for i, v := range []*Version{a, b} {
				if ctx.Err() != nil || v.broken != "" {
					continue
				}
				fail := func(reason string) {
					if ctx.Err() == nil {
						failures = append(failures, abreport.SideFailure{Side: v.Side, Run: run, Microload: name, Reason: reason})
					}
				}
				if err := v.Ensure(ctx); err != nil {
					fail(v.broken)
					continue
				}
				u, _ := url.Parse(v.child.URL)
				target := plan.Target(u, v.child)
				settle := quiet.before(ctx, v.child, target)
				if ctx.Err() != nil {
					continue
				}
				rep, r, err := p.Measure(ctx, fmt.Sprintf("ab %d/%d %s %s", run, plan.Runs, name, v.Side), plan.Microload(name), target,
					plan.Options(u, v.pprof))
				quiet.ran(v.child)
				if err != nil {
					if why := BusyReason(settle); why != "" {
						err = fmt.Errorf("%w; %s", err, why)
					}
					fail(err.Error())
					continue
				}
				rep.Settle = settle
				if w, ok := SettleWarning(settle); ok {
					rep.Warn(w.Kind, w.Message)
				}
				if plan.Profile && !v.pprof {
					rep.Warn("no-pprof", "the "+v.Side+" version serves no "+u.JoinPath("/debug/pprof/").String()+", the only place probe ab looks "+
						"(it starts both versions; it takes no --pprof URL): CPU and allocations per request come from its "+
						"process figures only. "+
						"Serve net/http/pprof's handlers on the server's own port for profiles; a profile from a separate debug port "+
						"(:6060, Caddy's admin :2019/debug/pprof/) needs a one-version run: probe MICROLOAD --target URL --pprof URL")
				}
				runDir := filepath.Join(plan.Dir, "runs", name, fmt.Sprintf("%s-%d", v.Side, run))
				if err := p.Write(runDir, rep); err != nil {
					return nil, fmt.Errorf("writing %s: %v", runDir, err)
				}
				if r.Ended != "" {
					// Partial figures would skew the medians: the run is
					// named, not counted.
					fail("the run ended early: " + r.Ended)
					continue
				}
				d, err := abreport.LoadRun(runDir)
				if err != nil {
					return nil, err
				}
				sides[i][name] = append(sides[i][name], d)
			}
		}
	}
	if len(sides[0])+len(sides[1]) == 0 {
		if ctx.Err() != nil {
			return nil, errors.New("interrupted before anything was measured")
		}
		if len(failures) > 0 {
			return nil, fmt.Errorf("nothing was measured: %s %s", failures[0].Side, failures[0].Reason)
		}
	}
	ab := CompareSides(a.Label, b.Label, sides[0], sides[1], failures)
	ab.Order = "interleaved A B A B: each microload's run on the before version, then on the after version, both processes alive throughout"
	return ab, nil
}
