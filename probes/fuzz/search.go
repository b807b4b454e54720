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
	"strings"
	"sync"
	"time"

	"github.com/probehq/probe/lib/crash"
	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"
)

// The search: clients draw inputs (fresh boundary values, or mutations of
// inputs that reached a new kind of reply), send them to the supervised
// target and say what each did; deaths are filed with the inputs that were
// in flight.

// searchClient is one of the concurrent clients of the search.
func (f *fuzzer) searchClient(ctx context.Context, stop context.CancelFunc, r *rand.Rand) {
	hc := newHTTPClient(1)
	burst := newHTTPClient(f.o.Concurrency)
	gens := newGenerators(r, f.o.Corpus)
	for ctx.Err() == nil {
		if !f.take(1) {
			return // the others finish what they hold
		}
		in, extreme := f.extreme()
		if !extreme {
			in = f.next(r, gens)
		}
		outs, errs := []Outcome{{}}, []error{nil}
		if !extreme && r.IntN(16) == 0 && f.take(int64(f.o.Concurrency-1)) {
			outs, errs = f.burst(ctx, burst, in) // races show only under concurrent copies
		} else {
			outs[0], errs[0] = f.try(ctx, hc, in, true)
		}
		failed := false
		for i, err := range errs {
			if err == nil {
				if f.note(in, outs[i]) {
					stop() // as many crashes as asked for
				}
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

// take counts n more inputs sent, and is false, counting none, when that
// would pass Options.Inputs.
func (f *fuzzer) take(n int64) bool {
	if f.o.Inputs <= 0 {
		return true
	}
	for {
		had := f.taken.Load()
		if had+n > f.o.Inputs {
			return false
		}
		if f.taken.CompareAndSwap(had, had+n) {
			return true
		}
	}
}

// burst sends concurrent copies of one input.
func (f *fuzzer) burst(ctx context.Context, hc *http.Client, in result.FuzzInput) ([]Outcome, []error) {
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

// next draws an input: fresh values, or a mutation of one that found
// something new; one the wire cannot carry (a literal around a hole can
// make it so) is counted and drawn again.
func (f *fuzzer) next(r *rand.Rand, g *generators) result.FuzzInput {
	for {
		in := f.draw(r, g)
		if sendable(f.request(in)) == "" {
			return in
		}
		f.seen.unsent.Add(1)
	}
}

func (f *fuzzer) draw(r *rand.Rand, g *generators) result.FuzzInput {
	ti := r.IntN(len(f.o.Templates))
	holes := f.o.Templates[ti].holes
	base := f.seen.pick(ti, r)
	in := result.FuzzInput{Template: ti, Values: make([]string, len(holes))}
	for i, h := range holes {
		if base != nil && r.IntN(len(holes)+1) != 0 {
			in.Values[i] = base.Values[i]
			if r.IntN(2) == 0 {
				in.Values[i] = g.mutate(h, base.Values[i])
			}
			continue
		}
		in.Values[i] = g.fresh(h)
	}
	return in
}

// try sends one input to the running target and says what it did.
func (f *fuzzer) try(ctx context.Context, hc *http.Client, in result.FuzzInput, record bool) (Outcome, error) {
	if why := sendable(f.request(in)); why != "" {
		f.seen.unsent.Add(1)
		return Outcome{Reason: "not sent: " + why}, nil
	}
	child, gen, watch, err := f.sup.ensure(ctx)
	if err != nil {
		return Outcome{}, err
	}
	id := f.sup.track(gen, in)
	status, header, body, local, err := f.send(ctx, hc, child, f.sup.headerOf(gen), in)
	if record {
		f.seen.inputs.Add(1)
	}
	if err == nil {
		f.sup.untrack(id)
		if record {
			f.recent.add(in)
		}
		out := Outcome{Status: status}
		if status >= 400 {
			out.Reason = firstLine(string(body))
		} else if f.o.Refused != nil {
			out.Reason = f.o.Refused(status, header, body)
			out.Refused = out.Reason != ""
		}
		return out, nil
	}
	if ctx.Err() != nil {
		f.sup.untrack(id)
		return Outcome{}, ctx.Err()
	}
	// No reply, or one cut short: did the server recover a panic, die or
	// hang? A whole reply needs no wait: net/http drops the reply of a
	// handler that panicked.
	if trace, ok := waitCause(child, watch, local, 2*time.Second); ok {
		f.sup.untrack(id)
		return panicOutcome(trace, status), nil
	}
	if ex := child.Exit(); ex != nil {
		if f.sup.wasKilled(gen) {
			f.sup.untrack(id)
			return Outcome{Reason: "no reply: the target was restarted after a hang"}, nil
		}
		out := Outcome{Class: "exit", Evidence: ex.Status, Stderr: ex.Stderr}
		if c, ok := crash.ClassifyExit(ex.Status, ex.Stderr); ok {
			out.Class, out.Evidence = c.Class, c.Evidence
		}
		out.Frames = crash.CrashFrames(ex.Stderr, 3)
		if record {
			f.recordDeath(gen, out)
		}
		f.sup.untrack(id)
		return out, nil
	}
	f.sup.untrack(id)
	if errors.Is(err, context.DeadlineExceeded) {
		f.sup.kill(gen)
		c := crash.ClassifyHang(fmt.Sprintf("no reply within %s while the process lived", f.o.Timeout))
		out := Outcome{Class: c.Class, Evidence: c.Evidence}
		if record {
			f.recordGroup(out, []result.FuzzInput{in})
		}
		return out, nil
	}
	return Outcome{Reason: "no reply: " + shortError(err)}, nil
}

// send makes one request, with the header opened for the process (gen),
// and reads the reply's start.
func (f *fuzzer) send(ctx context.Context, hc *http.Client, child *target.Child, gen http.Header, in result.FuzzInput) (status int,
	header http.Header, body []byte, local string, err error) {
	r := f.request(in)
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
		local = ci.Conn.LocalAddr().String()
	}})
	var rd io.Reader
	if f.o.Templates[in.Template].Body != "" {
		body := r.Body
		if f.o.Vary != nil {
			body = f.o.Vary(body, f.sent.Add(1))
		}
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, child.URL+r.Path, rd)
	if err != nil {
		return 0, nil, nil, "", err
	}
	// A reply read only until it is whole leaves its connection unusable,
	// and a client of one connection waits some 50 ms for its slot back
	// unless the request says the connection ends with it.
	req.Close = f.o.Whole != nil
	for k, v := range f.o.Header {
		req.Header[k] = v
	}
	for k, v := range gen {
		req.Header[k] = v
	}
	for _, h := range r.Header {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		// The name as given, not canonicalised: the bytes the repro sends.
		req.Header[h.Name] = append(req.Header[h.Name], h.Value)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, local, err
	}
	defer resp.Body.Close()
	if f.o.Whole != nil {
		body, err = readUntilWhole(resp, f.o.Whole)
		return resp.StatusCode, resp.Header, body, local, err
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, 4096))
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header, body, local, err
}

// wholeLimit bounds what readUntilWhole keeps of a reply: a tool may
// echo a megabyte argument JSON-escaped, six bytes a byte.
const wholeLimit = 16 << 20

// readUntilWhole reads a reply until its watch (whole's) says it is
// whole (the rest of its stream is not waited for: the connection is
// closed) or it ends. The watch is told each byte once, so a reply of
// many small events costs its length, not its length squared; past
// wholeLimit the rest is read and dropped.
func readUntilWhole(resp *http.Response, whole func(http.Header) func([]byte) bool) ([]byte, error) {
	var body []byte
	watch := whole(resp.Header)
	chunk := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(chunk)
		if len(body) < wholeLimit {
			more := chunk[:min(n, wholeLimit-len(body))]
			body = append(body, more...)
			if watch != nil && len(more) > 0 && watch(more) {
				return body, nil
			}
		}
		if err == io.EOF {
			return body, nil
		}
		if err != nil {
			return body, err
		}
	}
}

// waitCause waits up to d for the process to exit or for net/http's log of
// a panic it recovered while serving the client at local; it returns that
// log. The log is written before the connection closes, so it comes at once.
func waitCause(child *target.Child, w *panicWatch, local string, d time.Duration) (string, bool) {
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
	return Outcome{Class: crash.Panic, Evidence: firstLine(trace), Frames: crash.CrashFrames(trace, 3), Stderr: trace, Status: status}
}

// recordDeath files a death once per target generation, with the inputs
// that were in flight.
func (f *fuzzer) recordDeath(gen int, out Outcome) {
	suspects, first := f.sup.suspects(gen)
	if first {
		f.recordGroup(out, suspects)
	}
}

// signature tells one crash from another: its class and the top frames
// of its stack; for a stack overflow the package it recursed in; for out
// of memory the endpoint, since its stack is wherever the allocation that
// crossed the cap happened. Empty when nothing tells.
func (f *fuzzer) signature(out Outcome, in result.FuzzInput) string {
	frames := out.Frames
	switch out.Class {
	case crash.OutOfMemory:
		return out.Class + "|" + endpointOf(f.o.Templates[in.Template])
	case crash.StackOverflow:
		if rec := crash.Recursion(out.Stderr); rec != "" {
			return out.Class + "|recursion in " + rec
		}
	case crash.Hang:
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
func (f *fuzzer) groupKey(out Outcome, in result.FuzzInput) string {
	sig := f.signature(out, in)
	if sig == "" {
		sig = out.Class + "|" + normalise(out.Evidence)
	}
	return endpointOf(f.o.Templates[in.Template]) + "|" + sig
}

func (f *fuzzer) recordGroup(out Outcome, suspects []result.FuzzInput) {
	if len(suspects) > 0 {
		f.seen.file(f.groupKey(out, suspects[0]), out, suspects, time.Since(f.start))
	}
}

// note tallies an outcome and keeps inputs that found something new; it
// says whether the search has found as many crashes as it was asked to.
func (f *fuzzer) note(in result.FuzzInput, out Outcome) (enough bool) {
	// Deaths and hangs were filed by try; a recovered panic belongs to
	// exactly one input (the server named the client's address).
	if out.Class == crash.Panic {
		f.recordGroup(out, []result.FuzzInput{in})
	}
	f.seen.note(in, out)
	return f.o.StopAfter > 0 && f.seen.distinct() >= f.o.StopAfter
}

// newHTTPClient is the fuzzer's client: a 3xx is the input's reply, as
// the load engine sees it; nothing follows it with the header
// (lib/redirect).
func newHTTPClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns,
		DisableCompression: true, ResponseHeaderTimeout: 0}, CheckRedirect: redirect.Status}
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

func endpointOf(t *Template) string {
	if t.Endpoint != "" {
		return t.Endpoint
	}
	p, _, _ := strings.Cut(t.Path, "?")
	return p
}
