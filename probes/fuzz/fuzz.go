// Package fuzz finds the inputs that kill a Go server: it fills request
// templates with boundary values and grammar-built Jsonnet, sends them from
// several clients to a target process it supervises, classifies each death,
// restarts the target and goes on; afterwards it confirms each crash alone
// and shrinks it to the smallest input that still crashes the same way.
package fuzz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"probe/analyzers"
	"probe/probes"
)

// Options configure a fuzz run. Start is the one part that knows the
// target: it starts a fresh process (stderr copied to the writer given) and
// is called again after every death.
type Options struct {
	Templates   []*Template
	Header      http.Header // sent with every request
	Start       func(ctx context.Context, stderr io.Writer) (*probes.Child, error)
	Corpus      []Seed // Jsonnet seeds added to JsonnetCorpus
	Concurrency int
	Duration    time.Duration // the search; shrinking comes after
	Timeout     time.Duration // a request outliving it on a live target is a hang
	ShrinkTime  time.Duration // for confirming and shrinking all crashes together
	Seed        uint64
	Progress    func(Progress) // about once a second
}

// Progress is the live state, for the progress line.
type Progress struct {
	Phase    string // "search" or "shrink"
	Elapsed  time.Duration
	Inputs   int64
	Crashes  int // distinct so far
	Restarts int
}

// Input is one filled template: a value per hole.
type Input struct {
	Template int
	Values   []string
}

// Outcome is what one input did to the target.
type Outcome struct {
	Class    string // a crash class; empty when the target answered and lived
	Evidence string
	Frames   []string
	Stderr   string // the start of the crash dump or the recovered panic's trace
	Status   int    // HTTP status, when it answered
	Reason   string // first line of an error reply, or the transport error
}

// Crash is one distinct way the target died (or panicked), with the
// smallest input found that does it.
type Crash struct {
	Class      string
	Evidence   string
	Frames     []string
	Stderr     string
	Input      Input // the shrunk input
	Original   Input // the input as the search found it
	Method     string
	Path       string
	Body       []byte
	Endpoint   string
	FoundAfter time.Duration
	Seen       int  // times the search saw this crash
	Confirmed  bool // reproduced alone (or, when Concurrent, under concurrent copies)
	Concurrent bool // it needs concurrent requests to show
	Trials     int  // requests spent confirming and shrinking
	Shrink     string
	Also       []Input // other inputs that crash the same way (merged in)
	signature  string
}

// Result is a fuzz run's outcome.
type Result struct {
	Target    string
	Templates []string
	Start     time.Time
	Search    time.Duration
	Shrinking time.Duration
	Inputs    int64
	Statuses  map[int]int64
	Failures  map[string]int64 // error replies and transport errors by reason
	Restarts  int
	Crashes   []*Crash
	Ended     string // why the run stopped early, if it did
	Hostile   int64  // inputs the target answered with an error reply (4xx) and lived

	templates []*Template
}

// Render is an input as its method, path and body.
func (r *Result) Render(in Input) (method, path string, body []byte) {
	return r.templates[in.Template].Request(in.Values)
}

// startAttempts is how often a restart is tried before the target counts
// as one that will not start again.
const startAttempts = 3

// errStop ends the search: the target cannot be started again.
var errStop = errors.New("stop")

type fuzzer struct {
	o     Options
	start time.Time

	mu       sync.Mutex
	child    *probes.Child
	watch    *panicWatch
	gen      int
	restarts int
	startErr error
	inflight map[uint64]Input
	nextID   uint64
	reported map[int]bool // generations whose death was recorded
	killed   map[int]bool // generations probe killed itself (after a hang, or to start afresh)
	fresh    map[int]bool // killed to start afresh: not a restart the input caused

	inputs  atomic.Int64
	hostile atomic.Int64

	smu      sync.Mutex
	statuses map[int]int64
	failures map[string]int64
	groups   map[string]*group
	order    []string
	seen     map[string]bool // outcome signatures: inputs that found a new one are mutated more
	pool     [][]Input       // per template: inputs worth mutating
}

type group struct {
	first    Outcome
	suspects []Input
	found    time.Duration
	seen     int
}

// Run fuzzes until o.Duration has passed or ctx ends, then confirms and
// shrinks what it found for up to o.ShrinkTime. A ctx that ends keeps what
// was found so far.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Templates) == 0 {
		return nil, errors.New("no request template to fuzz")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	f := &fuzzer{o: o, start: time.Now(), inflight: map[uint64]Input{}, reported: map[int]bool{}, killed: map[int]bool{}, fresh: map[int]bool{},
		statuses: map[int]int64{}, failures: map[string]int64{}, groups: map[string]*group{}, seen: map[string]bool{},
		pool: make([][]Input, len(o.Templates))}
	res := &Result{Start: f.start, templates: o.Templates}
	for _, t := range o.Templates {
		res.Templates = append(res.Templates, t.String())
	}
	// The first start is a check of the command: its error is the run's.
	child, _, _, err := f.ensure(ctx)
	if err != nil {
		return nil, err
	}
	res.Target = child.URL
	if err := f.answers(ctx, child); err != nil {
		child.Kill()
		return nil, err
	}

	stopProgress := f.progress("search")
	searchCtx, cancel := context.WithTimeout(ctx, o.Duration)
	var wg sync.WaitGroup
	for i := range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.searchClient(searchCtx, rand.New(rand.NewPCG(o.Seed, uint64(i)+1)))
		}()
	}
	wg.Wait()
	cancel()
	stopProgress()
	res.Search = time.Since(f.start)
	if ctx.Err() != nil {
		res.Ended = "interrupted during the search"
	} else if f.startErr != nil {
		res.Ended = "the target would not start again: " + f.startErr.Error()
	}

	shrinkStart := time.Now()
	if ctx.Err() == nil && f.startErr == nil {
		stopProgress = f.progress("shrink")
		res.Crashes = f.confirmAndShrink(ctx)
		stopProgress()
		if ctx.Err() != nil {
			res.Ended = "interrupted while shrinking"
		}
	}
	if res.Crashes == nil {
		res.Crashes = f.unshrunk()
	}
	res.Shrinking = time.Since(shrinkStart)
	f.mu.Lock()
	if f.child != nil {
		f.child.Kill()
	}
	res.Restarts = f.restarts
	f.mu.Unlock()
	res.Inputs, res.Hostile = f.inputs.Load(), f.hostile.Load()
	res.Statuses, res.Failures = f.statuses, f.failures
	return res, nil
}

// answers checks that a freshly started target answers HTTP at all: a
// target that never answers would otherwise look like a hang on every input.
func (f *fuzzer) answers(ctx context.Context, child *probes.Child) error {
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", child.URL+"/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the target at %s accepts connections but answered no request within %s", child.URL, f.o.Timeout)
		}
		return fmt.Errorf("the target at %s does not answer: %v", child.URL, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil
}

func (f *fuzzer) progress(phase string) (stop func()) {
	if f.o.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f.mu.Lock()
				restarts := f.restarts
				f.mu.Unlock()
				f.smu.Lock()
				n := len(f.order)
				f.smu.Unlock()
				f.o.Progress(Progress{Phase: phase, Elapsed: time.Since(f.start), Inputs: f.inputs.Load(), Crashes: n, Restarts: restarts})
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// ensure returns the running target, starting a fresh one after a death.
func (f *fuzzer) ensure(ctx context.Context) (*probes.Child, int, *panicWatch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return nil, 0, nil, errStop
	}
	if f.child != nil {
		select {
		case <-f.child.Exited():
		default:
			return f.child, f.gen, f.watch, nil
		}
		if !f.fresh[f.gen] {
			f.restarts++
		}
	}
	w := newPanicWatch()
	child, err := f.o.Start(ctx, w)
	// A restart can fail for reasons of the moment (the fresh port taken
	// between probing and binding it): only a target that fails to start
	// startAttempts times running ends the search.
	for try := 1; err != nil && f.child != nil && try < startAttempts && ctx.Err() == nil; try++ {
		w = newPanicWatch()
		child, err = f.o.Start(ctx, w)
	}
	if err != nil {
		if f.child != nil && ctx.Err() == nil {
			f.startErr = err // it started once: say so in the report and stop
		}
		return nil, 0, nil, err
	}
	f.child, f.watch = child, w
	f.gen++
	f.inflight = map[uint64]Input{}
	return child, f.gen, w, nil
}

// kill ends the target of generation gen (a hang), so the next ensure
// starts a fresh one.
func (f *fuzzer) kill(gen int) {
	f.mu.Lock()
	c := f.child
	same := f.gen == gen
	f.killed[gen] = true
	f.mu.Unlock()
	if same && c != nil {
		c.Kill()
	}
}

func (f *fuzzer) wasKilled(gen int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed[gen]
}

func (f *fuzzer) track(gen int, in Input) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	if f.gen == gen {
		f.inflight[f.nextID] = in
	}
	return f.nextID
}

func (f *fuzzer) untrack(id uint64) {
	f.mu.Lock()
	delete(f.inflight, id)
	f.mu.Unlock()
}

// suspects are the inputs in flight when generation gen died, oldest
// first (a stack overflow or a runaway allocation takes time), and whether
// this caller is the first to report the death.
func (f *fuzzer) suspects(gen int) ([]Input, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reported[gen] || f.gen != gen {
		return nil, false
	}
	f.reported[gen] = true
	ids := make([]uint64, 0, len(f.inflight))
	for id := range f.inflight {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]Input, len(ids))
	for i, id := range ids {
		out[i] = f.inflight[id]
	}
	return out, true
}

func newHTTPClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns,
		DisableCompression: true, ResponseHeaderTimeout: 0}}
}

// send makes one request and reads the reply's start.
func (f *fuzzer) send(ctx context.Context, hc *http.Client, child *probes.Child, in Input) (status int, body []byte, local string, err error) {
	t := f.o.Templates[in.Template]
	path, b := t.Render(in.Values)
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
		local = ci.Conn.LocalAddr().String()
	}})
	var rd io.Reader
	if t.Body != "" {
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, t.Method, child.URL+path, rd)
	if err != nil {
		return 0, nil, "", err
	}
	for k, v := range f.o.Header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, local, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, 4096))
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, body, local, err
}

// try sends one input to the running target and says what it did.
func (f *fuzzer) try(ctx context.Context, hc *http.Client, in Input, record bool) (Outcome, error) {
	child, gen, watch, err := f.ensure(ctx)
	if err != nil {
		return Outcome{}, err
	}
	id := f.track(gen, in)
	status, body, local, err := f.send(ctx, hc, child, in)
	if record {
		f.inputs.Add(1)
	}
	if err == nil {
		f.untrack(id)
		out := Outcome{Status: status}
		if status >= 400 {
			out.Reason = firstLine(string(body))
		}
		return out, nil
	}
	if ctx.Err() != nil {
		f.untrack(id)
		return Outcome{}, ctx.Err()
	}
	// No reply, or one cut short: did the server recover a panic, die or
	// hang? A whole reply needs no wait: net/http drops the reply of a
	// handler that panicked.
	if trace, ok := waitCause(child, watch, local, 2*time.Second); ok {
		f.untrack(id)
		return panicOutcome(trace, status), nil
	}
	if ex := child.Exit(); ex != nil {
		if f.wasKilled(gen) {
			f.untrack(id)
			return Outcome{Reason: "no reply: the target was restarted after a hang"}, nil
		}
		out := Outcome{Class: "exit", Evidence: ex.Status, Stderr: ex.Stderr}
		if c, ok := analyzers.ClassifyExit(ex.Status, ex.Stderr); ok {
			out.Class, out.Evidence = c.Class, c.Evidence
		}
		out.Frames = analyzers.CrashFrames(ex.Stderr, 3)
		if record {
			f.recordDeath(gen, out)
		}
		f.untrack(id)
		return out, nil
	}
	f.untrack(id)
	if errors.Is(err, context.DeadlineExceeded) {
		f.kill(gen)
		c := analyzers.ClassifyHang(fmt.Sprintf("no reply within %s while the process lived", f.o.Timeout))
		out := Outcome{Class: c.Class, Evidence: c.Evidence}
		if record {
			f.recordGroup(out, []Input{in})
		}
		return out, nil
	}
	return Outcome{Reason: "no reply: " + shortError(err)}, nil
}

// waitCause waits up to d for the process to exit or for net/http's log of
// a panic it recovered while serving the client at local; it returns that
// log. The log is written before the connection closes, so it comes at once.
func waitCause(child *probes.Child, w *panicWatch, local string, d time.Duration) (string, bool) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for !w.has(local) {
		select {
		case <-child.Exited():
			return "", false
		case <-timeout.C:
			return "", false
		case <-tick.C:
		}
	}
	time.Sleep(50 * time.Millisecond) // the trace's lines after the first
	return w.take(local)
}

// panicOutcome is a panic net/http recovered (it recovers nothing else:
// a fatal error kills the process).
func panicOutcome(trace string, status int) Outcome {
	return Outcome{Class: analyzers.Panic, Evidence: firstLine(trace), Frames: analyzers.CrashFrames(trace, 3), Stderr: trace, Status: status}
}

// recordDeath files a death once per target generation, with the inputs
// that were in flight.
func (f *fuzzer) recordDeath(gen int, out Outcome) {
	suspects, first := f.suspects(gen)
	if first {
		f.recordGroup(out, suspects)
	}
}

// signature tells one crash from another: its class and the top frames
// of its stack; for a stack overflow the package it recursed in; for out
// of memory the endpoint, since its stack is wherever the allocation that
// crossed the cap happened. Empty when nothing tells.
func (f *fuzzer) signature(out Outcome, in Input) string {
	frames := out.Frames
	switch out.Class {
	case analyzers.OutOfMemory:
		return out.Class + "|" + endpointOf(f.o.Templates[in.Template])
	case analyzers.StackOverflow:
		if rec := analyzers.Recursion(out.Stderr); rec != "" {
			return out.Class + "|recursion in " + rec
		}
	case analyzers.Hang:
		return ""
	}
	if len(frames) == 0 {
		return ""
	}
	return out.Class + "|" + strings.Join(frames, "|")
}

// groupKey files the search's crashes: by signature and endpoint, so that
// each endpoint's way in to one bug is confirmed and shrunk on its own
// (they are merged again after shrinking, the smallest kept).
func (f *fuzzer) groupKey(out Outcome, in Input) string {
	sig := f.signature(out, in)
	if sig == "" {
		sig = out.Class + "|" + normalise(out.Evidence)
	}
	return endpointOf(f.o.Templates[in.Template]) + "|" + sig
}

func (f *fuzzer) recordGroup(out Outcome, suspects []Input) {
	f.smu.Lock()
	defer f.smu.Unlock()
	f.recordGroupLocked(out, suspects)
}

func (f *fuzzer) recordGroupLocked(out Outcome, suspects []Input) {
	if len(suspects) == 0 {
		return
	}
	key := f.groupKey(out, suspects[0])
	g := f.groups[key]
	if g == nil {
		g = &group{first: out, suspects: suspects, found: time.Since(f.start)}
		f.groups[key] = g
		f.order = append(f.order, key)
	}
	g.seen++
}

// searchClient is one of the concurrent clients of the search.
func (f *fuzzer) searchClient(ctx context.Context, r *rand.Rand) {
	hc := newHTTPClient(1)
	burst := newHTTPClient(f.o.Concurrency)
	gens := newGenerators(r, f.o.Corpus)
	for ctx.Err() == nil {
		in := f.next(r, gens)
		outs, errs := []Outcome{{}}, []error{nil}
		if r.IntN(16) == 0 {
			outs, errs = f.burst(ctx, burst, in) // races show only under concurrent copies
		} else {
			outs[0], errs[0] = f.try(ctx, hc, in, true)
		}
		failed := false
		for i, err := range errs {
			if err == nil {
				f.note(in, outs[i])
				continue
			}
			failed = true
			if errors.Is(err, errStop) || ctx.Err() != nil {
				return
			}
		}
		if failed {
			time.Sleep(100 * time.Millisecond) // a restart failed; the next try says why
		}
	}
}

// burst sends concurrent copies of one input.
func (f *fuzzer) burst(ctx context.Context, hc *http.Client, in Input) ([]Outcome, []error) {
	outs := make([]Outcome, f.o.Concurrency)
	errs := make([]error, f.o.Concurrency)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = f.try(ctx, hc, in, true)
		}()
	}
	wg.Wait()
	return outs, errs
}

// note tallies an outcome and keeps inputs that found something new.
func (f *fuzzer) note(in Input, out Outcome) {
	f.smu.Lock()
	defer f.smu.Unlock()
	switch {
	case out.Class != "":
		// Deaths and hangs were filed by try; a recovered panic belongs
		// to exactly one input (the server named the client's address).
		if out.Class == analyzers.Panic {
			f.recordGroupLocked(out, []Input{in})
		}
	case out.Status > 0:
		f.statuses[out.Status]++
		if out.Status >= 400 && out.Status < 500 {
			f.hostile.Add(1)
		}
		if out.Reason != "" {
			f.failures[fmt.Sprintf("%d %s", out.Status, normalise(out.Reason))]++
		}
	default:
		f.failures[out.Reason]++
	}
	sig := fmt.Sprintf("%d|%d|%s|%s", in.Template, out.Status, out.Class, normalise(out.Reason))
	if !f.seen[sig] {
		f.seen[sig] = true
		f.pool[in.Template] = append(f.pool[in.Template], in)
	}
}

var digits = regexp.MustCompile(`0x[0-9a-f]+|\d+`)

// normalise drops numbers and truncates, so that error replies differing
// only in a position or a size count as one.
func normalise(s string) string {
	s = digits.ReplaceAllString(s, "N")
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func shortError(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// generators make fresh values per kind of hole.
type generators struct {
	r       *rand.Rand
	jsonnet *JsonnetGen
}

func newGenerators(r *rand.Rand, extra []Seed) *generators {
	return &generators{r: r, jsonnet: NewJsonnetGen(r, append(append([]Seed{}, JsonnetCorpus...), extra...))}
}

func (g *generators) fresh(k Kind) string {
	pick := func(vs []string) string { return vs[g.r.IntN(len(vs))] }
	switch k {
	case Int:
		return randomInt(g.r)
	case Uint:
		return pick(boundaryUints())
	case Str:
		return pick(boundaryStrings())
	case JSON:
		return pick(boundaryJSON())
	default:
		return g.jsonnet.Program()
	}
}

// maxValue bounds a mutated value: mutations of mutations would otherwise
// grow without end, and past a megabyte a server rejects the request
// before any handler runs.
const maxValue = 1 << 20

func (g *generators) mutate(k Kind, v string) string {
	var m string
	switch k {
	case Jsonnet:
		m = g.jsonnet.Mutate(v)
	case Str:
		switch g.r.IntN(3) {
		case 0:
			m = v + g.fresh(Str)
		case 1:
			m = strings.Repeat(v, 1+g.r.IntN(min(100, maxValue/(len(v)+1)+1)))
		}
	}
	if m == "" || len(m) > maxValue {
		return g.fresh(k)
	}
	return m
}

// next draws an input: fresh values, or a mutation of one that found
// something new.
func (f *fuzzer) next(r *rand.Rand, g *generators) Input {
	ti := r.IntN(len(f.o.Templates))
	kinds := f.o.Templates[ti].Kinds()
	f.smu.Lock()
	var base *Input
	if pool := f.pool[ti]; len(pool) > 0 && r.IntN(2) == 0 {
		b := pool[r.IntN(len(pool))]
		base = &b
	}
	f.smu.Unlock()
	in := Input{Template: ti, Values: make([]string, len(kinds))}
	for i, k := range kinds {
		if base != nil && r.IntN(len(kinds)+1) != 0 {
			in.Values[i] = base.Values[i]
			if r.IntN(2) == 0 {
				in.Values[i] = g.mutate(k, base.Values[i])
			}
			continue
		}
		in.Values[i] = g.fresh(k)
	}
	return in
}

// request is an input as its method, path and body.
func (f *fuzzer) request(in Input) (method, path string, body []byte) {
	return f.o.Templates[in.Template].Request(in.Values)
}

func endpointOf(t *Template) string {
	p, _, _ := strings.Cut(t.Path, "?")
	return p
}
