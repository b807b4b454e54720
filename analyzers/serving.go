package analyzers

import (
	"fmt"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/frames"
)

// CPUSplit is how the target's CPU divides by what its goroutines do, in
// seconds of the CPU profile: the denominator of every "of the CPU serving
// requests" share is Serving, of every "of the target's CPU" share Total.
// Probe's own measuring (its pprof requests) is not in Total.
type CPUSplit struct {
	Total      float64 `json:"total_s"`      // the target's CPU, probe's measuring left out
	Serving    float64 `json:"serving_s"`    // goroutines that serve requests
	GC         float64 `json:"gc_s"`         // the collector's own goroutines (mark workers, sweeper)
	Idle       float64 `json:"idle_s"`       // the scheduler looking for work
	Runtime    float64 `json:"runtime_s"`    // the runtime's other background (scavenger, finalizers, system)
	Background float64 `json:"background_s"` // goroutines that serve no request (main, timers, a library's own loops)
	Measuring  float64 `json:"measuring_s"`  // probe's profiles being served, left out of Total
}

// Goroutine roles: what the goroutine a sample ran on does.
const (
	roleServing = iota
	roleGC
	roleIdle
	roleRuntime
	roleBackground
)

// serveSet is what the samples under a serving frame show of the server:
// the functions and third-party modules that run while it serves.
type serveSet struct {
	funcs   map[string]bool
	modules map[string]bool
	talks   map[string]bool // goroutine start functions seen talking to a client's connection or reply
	types   map[string]bool // their receiver types: one object's goroutines (a connection's reader, dispatcher, handlers)
}

// servingSet reads, from the samples of either profile with a frame of the
// serving marker, the functions and the third-party modules on them: a
// goroutine started in one of them (the SDK's JSON-RPC handler, grpc's
// stream workers, a handler recursing deeper than the profile keeps) is
// the server's too.
func (s *samples) servingSet() serveSet {
	set := serveSet{funcs: map[string]bool{}, modules: map[string]bool{}, talks: map[string]bool{}, types: map[string]bool{}}
	for _, ss := range [][]stack{s.cpu, s.allocs} {
		for _, st := range ss {
			if s.stopped() {
				return set
			}
			if root := rootOf(st); root >= 0 && st.locs < cutDepth && s.marked(st, markConnection) {
				set.talks[st.funcs[root]] = true
				if t := receiverType(st.funcs[root]); t != "" {
					set.types[t] = true
				}
			}
			j := s.markedAt(st, markServing)
			if j < 0 {
				continue
			}
			for k := 0; k < j; k++ { // under the serving frame
				set.funcs[st.funcs[k]] = true
				if st.kinds[k] == frames.ThirdParty {
					set.modules[frames.Module(st.funcs[k])] = true
				}
			}
		}
	}
	return set
}

// role says what st's goroutine does, by its outermost frame (where the
// goroutine started) and what it runs: a goroutine with a serving frame,
// or started in a function or a third-party module seen serving, or in a
// function whose goroutines are seen writing a reply or to a client's
// connection (the MCP SDK's handler writing its reply event, a WebSocket
// write loop: all their samples, the encoding too), serves; the runtime's own goroutines are the collector, the
// scheduler's idle search or other background; the rest (the main
// goroutine, a ticker, a library's own loop) serves no request.
func (s *samples) role(st stack, set serveSet) int {
	if s.marked(st, markServing) {
		return roleServing
	}
	n := rootOf(st) + 1
	if n == 0 {
		return roleRuntime
	}
	root, kind := st.funcs[n-1], st.kinds[n-1]
	if st.locs >= cutDepth && kind != frames.Runtime {
		return cutRole(st, set)
	}
	switch {
	case kind == frames.Runtime:
		return runtimeRole(st, root, s.gc)
	case set.funcs[root], set.talks[root], set.types[receiverType(root)] && receiverType(root) != "":
		return roleServing
	case kind == frames.ThirdParty && set.modules[frames.Module(root)]:
		return roleServing
	case kind == frames.Own && s.marked(st, markConnection):
		return roleServing
	}
	return roleBackground
}

// receiverType is the package and receiver type of a method (closures
// in it too): "…/jsonrpc2.(*Connection)" for jsonrpc2.(*Connection).
// handleAsync.func2; "" for a plain function.
func receiverType(fn string) string {
	pkg := frames.PkgPath(fn)
	rest := strings.TrimPrefix(fn[len(pkg):], ".")
	recv, _, ok := strings.Cut(rest, ".")
	if !ok || isClosureName(recv) || !strings.HasPrefix(recv, "(") && !isExported(recv) {
		return ""
	}
	if !strings.HasPrefix(recv, "(") {
		recv = "(" + recv + ")" // a value receiver: pkg.T.Method
	}
	return pkg + "." + recv
}

func isExported(name string) bool { return name != "" && name[0] >= 'A' && name[0] <= 'Z' }

// rootOf is the index of the function st's goroutine started in (its
// outermost frame, runtime.goexit left out), or -1.
func rootOf(st stack) int {
	n := len(st.funcs)
	for n > 1 && st.funcs[n-1] == "runtime.goexit" {
		n--
	}
	return n - 1
}

// cutDepth is the depth at which Go's CPU profiler cuts a stack (64
// locations, the innermost kept): such a sample no longer shows where its
// goroutine started, and a handler under a few dozen middleware layers
// and a recursion is cut on nearly every sample.
const cutDepth = 64

// cutRole is the role of a sample cut at the profiler's depth: it serves
// when it runs code seen serving, the target's own or a module seen under
// a serving frame (a background loop of the target's own is seldom 64
// frames deep; a handler often is).
func cutRole(st stack, set serveSet) int {
	for k, fn := range st.funcs {
		switch {
		case st.kinds[k] == frames.Own, set.funcs[fn]:
			return roleServing
		case st.kinds[k] == frames.ThirdParty && set.modules[frames.Module(fn)]:
			return roleServing
		}
	}
	return roleBackground
}

// cutServing adds to set the functions of cut samples that serve: a cut
// sample of a library alone (an encoder's recursion filling all 64
// locations) serves when its functions are seen in a cut sample that
// serves. Two rounds reach a chain of three.
func (s *samples) cutServing(set serveSet) {
	for round := 0; round < 2; round++ {
		for _, st := range s.cpu {
			if s.stopped() {
				return
			}
			if st.locs < cutDepth || len(st.funcs) == 0 || st.kinds[len(st.funcs)-1] == frames.Runtime || cutRole(st, set) != roleServing {
				continue
			}
			for _, fn := range st.funcs {
				set.funcs[fn] = true
			}
		}
	}
}

// runtimeRole tells the runtime's goroutines apart: the collector's (a
// gc-pressure rule's frames at the root), the scheduler's search for work
// (idle CPU), and the rest.
func runtimeRole(st stack, root string, gc []*Rule) int {
	if root == "runtime.main" {
		return roleBackground // the main goroutine: start-up, or a loop of the target's
	}
	for _, fn := range st.funcs {
		switch fn {
		case "runtime.findRunnable", "runtime.schedule", "runtime.stealWork", "runtime.park_m":
			return roleIdle
		}
	}
	for _, r := range gc {
		if r.memo.matched(r, root) {
			return roleGC
		}
	}
	return roleRuntime
}

// splitCPU marks each CPU sample's role, sums the serving CPU into
// requestTotal and returns the split.
func (s *samples) splitCPU(cpu *profile.Profile) CPUSplit {
	set := s.servingSet()
	s.cutServing(set)
	var by [roleBackground + 1]int64
	for i := range s.cpu {
		if s.stopped() {
			break
		}
		r := s.role(s.cpu[i], set)
		by[r] += s.cpu[i].value
		if r == roleServing {
			s.cpu[i].serving = true
			s.requestTotal += s.cpu[i].value
		}
	}
	sec := func(v int64) float64 { return float64(v) / 1e9 }
	return CPUSplit{Total: sec(s.cpuTotal), Serving: sec(by[roleServing]), GC: sec(by[roleGC]), Idle: sec(by[roleIdle]),
		Runtime: sec(by[roleRuntime]), Background: sec(by[roleBackground]), Measuring: sec(measuringCPU(cpu))}
}

// measuringCPU is the CPU of the samples stacks leaves out as probe's own
// measuring.
func measuringCPU(p *profile.Profile) int64 {
	if p == nil {
		return 0
	}
	idx, err := p.SampleIndexByName("cpu")
	if err != nil {
		idx, _ = p.SampleIndexByName("")
	}
	var total int64
	for _, smp := range p.Sample {
		if idx >= len(smp.Value) || smp.Value[idx] <= 0 {
			continue
		}
	sample:
		for _, loc := range smp.Location {
			for _, line := range loc.Line {
				if line.Function != nil && measuring([]string{line.Function.Name}) {
					total += smp.Value[idx]
					break sample
				}
			}
		}
	}
	return total
}

// Line says the split in words, each part with its share of the target's
// CPU: "" when the profile held no CPU.
func (c CPUSplit) Line() string {
	if c.Total <= 0 {
		return ""
	}
	part := func(what string, v float64) string {
		return fmt.Sprintf("%s %.2f s (%s)", what, v, pct(v/c.Total))
	}
	s := fmt.Sprintf("The target's CPU in the profile: %.2f s; ", c.Total) + strings.Join([]string{
		part("serving requests", c.Serving), part("garbage collector", c.GC), part("idle scheduler", c.Idle),
		part("other runtime", c.Runtime), part("background goroutines", c.Background)}, ", ")
	if c.Measuring > 0 {
		s += fmt.Sprintf("; probe's own profiling %.2f s, left out", c.Measuring)
	}
	return s
}

// ThinProfile says, when a profile holds some but too little CPU serving
// requests for a work of a quarter of it to be named, how little: a
// target starved by a busy machine, or a run too short, names nothing
// and must say so rather than read as clean.
func ThinProfile(split CPUSplit) (string, bool) {
	least := float64(minCPUEvidence) / 1e9
	// Thin: too little for a work of a quarter of it (the repeated-work
	// floor) to reach the evidence a finding needs.
	if split.Serving <= 0 || split.Serving >= least/minRepeatedWork {
		return "", false
	}
	unnamed := fmt.Sprintf("work under %.0f%% of it went unnamed", 100*least/split.Serving)
	if split.Serving <= least {
		unnamed = "no work in it could be named"
	}
	return fmt.Sprintf("the CPU profile holds %.2f s of the target's CPU serving requests, and a work is named from %.1f s of "+
		"CPU on, so %s: profile longer (--duration), or on a quieter machine", split.Serving, least, unnamed), true
}
