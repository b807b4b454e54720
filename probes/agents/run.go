package agents

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/probehq/probe/lib/textline"
)

// recorder is one agent's rows, merged after the run.
type recorder struct {
	connect *Op
	tools   map[string]*Op // by role
}

// Run runs the agents for the warm-up and the window, then checks. The
// error is for a load that could not run at all; a session that could not
// be set up, or calls that failed, are in the result.
func (l *Load) Run(ctx context.Context) (*Result, error) {
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
		rec := &recorder{connect: newOp("connect", "", o.Timeout), tools: map[string]*Op{}}
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
				word, term := "", l.spec.Terms[rng.IntN(len(l.spec.Terms))]
				if role == Write {
					word = l.word()
				}
				t := l.spec.Tool(role)
				sent := time.Now()
				// A call in flight when the window closes finishes: its
				// write may be acknowledged, and the checks count it.
				res, err := l.call(context.WithoutCancel(ctx), cs, t, it, word, term)
				took := time.Since(sent)
				if err == nil && role == Write {
					var v int64
					if v, err = version(res, t); err == nil {
						it.add(ack{version: v, word: word, at: time.Now()})
					}
				}
				if err != nil && role == Write {
					it.failed(word)
				}
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
	res := &Result{Endpoint: o.Endpoint, Agents: o.Agents, Keys: min(max(len(o.Keys), 1), o.Agents), Weights: o.Weights,
		Start: measureFrom, Duration: stopped.Sub(measureFrom)}
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
		res.Projects = append(res.Projects, &Project{Name: name, Ops: rows(o.Timeout, l.spec, mine)})
	}
	if ctx.Err() == nil {
		res.Checks = l.check(ctx, res.All)
	}
	return res, nil
}

// rows merge recorders into connect and the tools' rows.
func rows(timeout time.Duration, spec Spec, recs []*recorder) []*Op {
	out := []*Op{newOp("connect", "", timeout)}
	for _, r := range Roles {
		out = append(out, newOp(spec.Tool(r).Name, r, timeout))
	}
	for _, rec := range recs {
		out[0].merge(rec.connect)
		for i, r := range Roles {
			out[i+1].merge(rec.tools[r])
		}
	}
	return out
}

// check is the checks after the run: failed calls, lost writes, freshness.
func (l *Load) check(ctx context.Context, all []*Op) Checks {
	c := Checks{Items: len(l.items), FreshWithin: l.o.FreshWithin}
	for _, op := range all {
		for _, kind := range Outcomes {
			if n := op.Errors[kind]; n > 0 {
				c.FailedCalls += n
				c.Failures = append(c.Failures, fmt.Sprintf("%s: %d %s", op.Name, n, kind))
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
	for i, it := range l.items {
		c.Versions += len(it.acks)
		if lost, ok := l.lost(ctx, sessions[i/l.o.Contended], it); !ok {
			c.Lost = append(c.Lost, lost)
		}
	}
	// Freshness in parallel: every item waits up to FreshWithin.
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, it := range l.items {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			stale, took, ok := l.fresh(ctx, sessions[i/l.o.Contended], it)
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

// lost checks an item's versions: distinct, and the final one its base
// plus the writes acknowledged after it.
func (l *Load) lost(ctx context.Context, cs *mcp.ClientSession, it *item) (Lost, bool) {
	base := it.acks[0].version
	rep := Lost{Project: it.project, Item: it.name, Base: base, Acked: len(it.acks) - 1, Unanswered: len(it.unanswered), Final: -1}
	seen := map[int64]int{}
	for _, a := range it.acks {
		seen[a.version]++
	}
	for v, n := range seen {
		if n > 1 {
			rep.Twice = append(rep.Twice, v)
		}
	}
	slices.Sort(rep.Twice)
	if t := l.spec.Tool(Read); t.Version != "" {
		res, err := l.call(ctx, cs, t, it, "", "")
		if err == nil {
			rep.Final, err = version(res, t)
		}
		if err != nil {
			rep.Final, rep.ReadErr = -1, textline.Of(err.Error(), 160)
		}
	} else {
		rep.Final = slices.MaxFunc(it.acks, func(a, b ack) int { return int(a.version - b.version) }).version
	}
	return rep, len(rep.Twice) == 0 && rep.Final >= 0 && rep.Missing() == 0 && rep.Extra() == 0
}

// fresh searches the word of the item's last acknowledged write (the
// highest version; the later acknowledgement of two) until the item is
// among the hits or FreshWithin has passed. A write that failed may have
// landed after it: its word finds the item as well (the last few tried).
func (l *Load) fresh(ctx context.Context, cs *mcp.ClientSession, it *item) (Stale, time.Duration, bool) {
	last := it.acks[0]
	for _, a := range it.acks[1:] {
		if a.version > last.version || a.version == last.version && a.at.After(last.at) {
			last = a
		}
	}
	t := l.spec.Tool(Search)
	match := holes(it.name, "", "", it.project).Replace(t.Match)
	stale := Stale{Project: it.project, Item: it.name, Word: last.word, Version: last.version}
	words := append([]string{last.word}, it.unanswered[max(0, len(it.unanswered)-4):]...)
	start := time.Now()
	for {
		stale.Err = ""
		for _, w := range words {
			res, err := l.call(ctx, cs, t, it, "", w)
			if err == nil && strings.Contains(text(res), match) {
				return stale, time.Since(start), true
			}
			if err != nil {
				stale.Err = textline.Of(err.Error(), 160)
			}
		}
		if time.Since(start) >= l.o.FreshWithin || ctx.Err() != nil {
			return stale, time.Since(start), false
		}
		time.Sleep(min(50*time.Millisecond, l.o.FreshWithin-time.Since(start)))
	}
}
