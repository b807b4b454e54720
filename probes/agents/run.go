package agents

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/probehq/probe/result"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/textline"
)

// recorder is one agent's rows, merged after the run.
type recorder struct {
	connect *result.AgentOp
	tools   map[string]*result.AgentOp // by role
}

// Run runs the agents for the warm-up and the window, then checks. The
// error is for a load that could not run at all; a session that could not
// be set up, or calls that failed, are in the result.
func (l *Load) Run(ctx context.Context) (*result.Agents, error) {
	o := l.o
	start := time.Now()
	measureFrom := start.Add(o.Warmup)
	end := measureFrom.Add(o.Duration)
	recs := make([]*recorder, o.Agents)
	var wg sync.WaitGroup
	var setupErr error
	var errOnce sync.Once
	total := o.Weights[Write] + o.Weights[Search] + o.Weights[Read]
	for id := range o.Agents {
		rec := &recorder{connect: newOp("connect", "", o.Timeout), tools: map[string]*result.AgentOp{}}
		for _, r := range Roles {
			rec.tools[r] = newOp(l.spec.Tool(r).Name, r, o.Timeout)
		}
		recs[id] = rec
		wg.Go(func() {
			proj := id % len(l.projects)
			items := l.items[proj*o.Contended : (proj+1)*o.Contended]
			t0 := time.Now()
			cs, err := l.connect(ctx, id)
			rec.connect.Calls++
			rec.connect.Latency.RecordValue(max(time.Since(t0).Microseconds(), 1))
			if err != nil {
				rec.connect.Errors[outcome(err)]++
				errOnce.Do(func() { setupErr = err })
				return
			}
			defer cs.Close()
			rng := rand.New(rand.NewPCG(uint64(id), uint64(start.UnixNano())))
			for ctx.Err() == nil && time.Now().Before(end) {
				n, role := rng.IntN(total), Read
				switch {
				case n < o.Weights[Write]:
					role = Write
				case n < o.Weights[Write]+o.Weights[Search]:
					role = Search
				}
				it := items[rng.IntN(len(items))]
				term := l.spec.Terms[rng.IntN(len(l.spec.Terms))]
				sent := time.Now()
				// A call in flight when the window closes finishes: its
				// write may be acknowledged, and the checks count it.
				var err error
				if role == Write {
					var a ack
					if a, err = l.write(context.WithoutCancel(ctx), cs, it); err == nil {
						it.add(a)
					} else {
						it.failed(a.word)
					}
				} else {
					_, err = l.call(context.WithoutCancel(ctx), cs, l.spec.Tool(role), it, "", term)
				}
				took := time.Since(sent)
				if sent.Before(measureFrom) || ctx.Err() != nil {
					continue
				}
				op := rec.tools[role]
				op.Calls++
				op.Latency.RecordValue(max(took.Microseconds(), 1))
				if err != nil {
					kind := outcome(err)
					if _, bad := errors.AsType[*ErrTool](err); bad {
						kind = BadResult
					}
					op.Errors[kind]++
					if op.Redirect == "" && kind == Transport {
						if r := redirect.As(err); r != nil {
							op.Redirect = textline.Of(r.Error(), textline.Max)
						}
					}
				}
			}
		})
	}
	windowDone := make(chan struct{})
	if o.Window != nil {
		wait := time.Until(measureFrom)
		go func() {
			defer close(windowDone)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			o.Window(ctx, o.Duration)
		}()
	} else {
		close(windowDone)
	}
	wg.Wait()
	stopped := time.Now()
	<-windowDone
	res := &result.Agents{Endpoint: o.Endpoint, Agents: o.Agents, Keys: min(max(len(o.Keys), 1), o.Agents), Calls: o.Weights.String(),
		Start: measureFrom, Duration: stopped.Sub(measureFrom), MCP: l.lane}
	if stopped.After(end) {
		res.Duration = o.Duration
	}
	if res.Duration < 0 {
		res.Duration = 0
	}
	if ctx.Err() != nil {
		res.Ended = "interrupted"
	} else if setupErr != nil {
		res.Ended = "session set-up failed: " + setupErr.Error()
	}
	res.All = rows(o.Timeout, l.spec, recs)
	for p, name := range l.projects {
		var mine []*recorder
		for id, r := range recs {
			if id%len(l.projects) == p {
				mine = append(mine, r)
			}
		}
		res.Projects = append(res.Projects, &result.AgentProject{Name: name, Ops: rows(o.Timeout, l.spec, mine)})
	}
	if ctx.Err() == nil {
		res.Checks = l.check(ctx, res.All)
	}
	return res, nil
}

// rows merge recorders into connect and the tools' rows.
func rows(timeout time.Duration, spec Spec, recs []*recorder) []*result.AgentOp {
	out := []*result.AgentOp{newOp("connect", "", timeout)}
	for _, r := range Roles {
		out = append(out, newOp(spec.Tool(r).Name, r, timeout))
	}
	for _, rec := range recs {
		mergeOp(out[0], rec.connect)
		for i, r := range Roles {
			mergeOp(out[i+1], rec.tools[r])
		}
	}
	return out
}

// check is the checks after the run: failed calls, lost writes, freshness.
func (l *Load) check(ctx context.Context, all []*result.AgentOp) result.AgentChecks {
	c := result.AgentChecks{Mode: l.spec.Mode(), Keeps: l.keeps, Items: len(l.items), FreshWithin: l.o.FreshWithin}
	for _, op := range all {
		for _, kind := range Outcomes {
			if n := op.Errors[kind]; n > 0 {
				c.FailedCalls += n
				f := fmt.Sprintf("%s: %d %s", op.Name, n, kind)
				if kind == Transport && op.Redirect != "" {
					f += " (" + op.Redirect + ")"
				}
				c.Failures = append(c.Failures, f)
			}
		}
	}
	// Each project's items are checked with the key of its first agent:
	// a server may give a key one project alone.
	sessions := make([]*mcp.ClientSession, len(l.projects))
	for p := range l.projects {
		cs, err := l.connect(ctx, p)
		if err != nil {
			c.FailedCalls++
			c.Failures = append(c.Failures, "the checks' session: "+err.Error())
			return c
		}
		defer cs.Close()
		sessions[p] = cs
	}
	// Lost writes first: an item's last word is searched only when probe
	// knows its write was stored (its version added up, or it was read
	// back), so that a lost write is never counted as stale as well.
	searched := make([][]string, len(l.items))
	versions := make([]int64, len(l.items))
	for i, it := range l.items {
		c.Writes += len(it.acks)
		cs := sessions[i/l.o.Contended]
		var lost result.AgentLost
		ok := false
		if c.Mode == result.AgentByVersion {
			c.Versions += len(it.acks)
			lost, ok = l.byVersion(ctx, cs, it)
			if ok {
				last := lastAck(it.acks)
				// A write that failed may have landed after it: its
				// word finds the item as well (the last few tried).
				searched[i] = append([]string{last.word}, it.unanswered[max(0, len(it.unanswered)-4):]...)
				versions[i] = last.version
			}
		} else {
			var word string
			var n int
			lost, ok, word, n = l.readBack(ctx, cs, it)
			c.ReadBack += n
			if word != "" {
				searched[i], versions[i] = []string{word}, -1
			}
		}
		if !ok {
			c.Lost = append(c.Lost, lost)
		}
	}
	// Freshness in parallel: every item waits up to FreshWithin.
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, it := range l.items {
		if searched[i] == nil {
			continue
		}
		c.Searched++
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			stale := result.AgentStale{Project: it.project, Item: it.name, Word: searched[i][0], Version: versions[i]}
			took, ok := l.fresh(ctx, sessions[i/l.o.Contended], it, searched[i], &stale)
			mu.Lock()
			defer mu.Unlock()
			if !ok {
				c.Stale = append(c.Stale, stale)
			} else {
				c.Fresh = max(c.Fresh, took)
			}
		})
	}
	wg.Wait()
	sort.Slice(c.Stale, func(i, j int) bool {
		return c.Stale[i].Project < c.Stale[j].Project || c.Stale[i].Project == c.Stale[j].Project && c.Stale[i].Item < c.Stale[j].Item
	})
	return c
}

// byVersion checks an item's versions: distinct, and the one read back
// its first plus the writes acknowledged after it.
func (l *Load) byVersion(ctx context.Context, cs *mcp.ClientSession, it *item) (result.AgentLost, bool) {
	base := it.acks[0].version
	rep := result.AgentLost{Project: it.project, Item: it.name, Base: base, Acked: len(it.acks) - 1, Unanswered: len(it.unanswered),
		Final: -1, Twice: twice(it.acks)}
	t := l.spec.Tool(Read)
	res, err := l.call(ctx, cs, t, it, "", "")
	if err == nil {
		rep.Final, err = version(res, t)
	}
	if err != nil {
		rep.Final, rep.ReadErr = -1, textline.Of(err.Error(), 160)
	}
	return rep, len(rep.Twice) == 0 && rep.Final >= 0 && rep.Missing() == 0 && rep.Extra() == 0
}

// lastAck is the item's last acknowledged write: the highest version, the
// later acknowledgement of two.
func lastAck(acks []ack) ack {
	last := acks[0]
	for _, a := range acks[1:] {
		if a.version > last.version || a.version == last.version && a.at.After(last.at) {
			last = a
		}
	}
	return last
}

// fresh searches words (the first is the item's last; see check) until
// the item is among the hits or FreshWithin has passed; stale gets the
// last search's failure.
func (l *Load) fresh(ctx context.Context, cs *mcp.ClientSession, it *item, words []string, stale *result.AgentStale) (time.Duration, bool) {
	t := l.spec.Tool(Search)
	match := holes(it.name, "", "", it.project).Replace(t.Match)
	start := time.Now()
	for {
		stale.Err = ""
		for _, w := range words {
			res, err := l.call(ctx, cs, t, it, "", w)
			if err == nil && strings.Contains(text(res), match) {
				return time.Since(start), true
			}
			if err != nil {
				stale.Err = textline.Of(err.Error(), 160)
			}
		}
		if time.Since(start) >= l.o.FreshWithin || ctx.Err() != nil {
			return time.Since(start), false
		}
		time.Sleep(min(50*time.Millisecond, l.o.FreshWithin-time.Since(start)))
	}
}
