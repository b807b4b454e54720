// Package contention is the analysis of the locks and waits requests
// spent their time on (the block and mutex profiles) and of what the
// wall-clock time of goroutines went to (WallStates).
package contention

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/lib/frames"
)

// waitKinds tell what a blocked goroutine waits on by the frame it waits
// in (the block profile's leaf side, runtime frames left out).
var waitKinds = []struct{ prefix, kind string }{
	{"sync.(*Mutex).Lock", "lock"},
	{"sync.(*RWMutex).Lock", "lock"},
	{"sync.(*RWMutex).RLock", "lock"},
	{"internal/sync.(*Mutex).Lock", "lock"},
	{"sync.(*WaitGroup).Wait", "wait group"},
	{"sync.(*Cond).Wait", "condition"},
	{"runtime.chanrecv", "channel"},
	{"runtime.chansend", "channel"},
	{"runtime.selectgo", "channel"},
	{"time.Sleep", "sleep"},
}

// waitKind is the kind of wait of st and the index of its waiting frame,
// or "" and -1.
func waitKind(st analyzers.Sample) (string, int) {
	for i, fn := range st.Funcs {
		for _, w := range waitKinds {
			if strings.HasPrefix(fn, w.prefix) {
				return w.kind, i
			}
		}
	}
	return "", -1
}

// waiterOf is the innermost own frame rootward of the waiting frame i, or
// the frame just above it when there is none.
func waiterOf(st analyzers.Sample, i int) string {
	if w := st.OwnAbove(i + 1); w != "" {
		return w
	}
	if i+1 < len(st.Funcs) {
		return frames.DisplayName(st.Funcs[i+1])
	}
	return ""
}

// inHandler says whether a stack is a request being handled (not a
// connection idling between requests, nor a background goroutine).
func inHandler(st analyzers.Sample) bool {
	for _, fn := range st.Funcs {
		if strings.HasSuffix(fn, ".ServeHTTP") || strings.HasSuffix(fn, ").serveConn") || strings.Contains(fn,
			"processUnaryRPC") || strings.Contains(fn, "processStreamingRPC") {
			return true
		}
	}
	return false
}

// Findings are the locks and waits requests spent their time on, from
// a run's block profile (the waiters: where they waited and how long) and
// mutex profile (the holders: the stacks that released a contended lock,
// with the delay they caused). requestTime is the time all the run's
// requests took together; a wait is a finding when it is 5% of it or more.
// Either profile may be nil (not enabled in the target).
func Findings(mutex, block *profile.Profile, requestTime time.Duration) []analyzers.Finding {
	if requestTime <= 0 || (mutex == nil && block == nil) {
		return nil
	}
	code := frames.Code{MainModule: frames.MainModule(block, mutex)}
	type site struct {
		kind, at, waiter string
		delay            int64
		stacks           map[string]int64
	}
	sites := map[string]*site{}
	blocked, _ := analyzers.Samples(block, "delay", code)
	for _, st := range blocked {
		kind, i := waitKind(st)
		if kind == "" || !inHandler(st) {
			continue
		}
		waiter := waiterOf(st, i)
		key := kind + "|" + waiter
		s := sites[key]
		if s == nil {
			s = &site{kind: kind, at: st.Funcs[i], waiter: waiter, stacks: map[string]int64{}}
			sites[key] = s
		}
		s.delay += st.Value
		s.stacks[strings.Join(st.Funcs[i:min(len(st.Funcs), i+6)], " ← ")] += st.Value
	}
	// Holders: the mutex profile's stacks end where a contended lock was
	// released; the own function there held it.
	holders := map[string]int64{}
	holderStacks := map[string]int64{}
	var holderTotal int64
	held, _ := analyzers.Samples(mutex, "delay", code)
	for _, st := range held {
		i := 0
		for j, fn := range st.Funcs {
			if strings.Contains(fn, "Unlock") {
				i = j
				break
			}
		}
		h := waiterOf(st, i)
		holders[h] += st.Value
		holderStacks[strings.Join(st.Funcs[i:min(len(st.Funcs), i+6)], " ← ")] += st.Value
		holderTotal += st.Value
		if block == nil { // no waiters' profile: the holders' delay is the wait
			key := "lock|" + h
			s := sites[key]
			if s == nil {
				s = &site{kind: "lock", at: st.Funcs[i], waiter: h, stacks: map[string]int64{}}
				sites[key] = s
			}
			s.delay += st.Value
			s.stacks[strings.Join(st.Funcs[i:min(len(st.Funcs), i+6)], " ← ")] += st.Value
		}
	}
	var out []analyzers.Finding
	for _, s := range sites {
		share := float64(s.delay) / float64(requestTime.Nanoseconds())
		if share < 0.05 || s.kind == "sleep" {
			continue
		}
		f := analyzers.Finding{Rule: "contention", Class: "contention", WaitShare: min(1, share),
			Severity: analyzers.Severity(min(1, share)), OwnFrame: s.waiter, Frames: []string{s.at, s.waiter}}
		evidence := fmt.Sprintf("requests waited %s on a %s in %s (%s), %.0f%% of the time they took",
			time.Duration(s.delay).Round(time.Millisecond), s.kind, s.waiter, s.at, 100*min(1, share))
		if s.kind == "lock" && holderTotal > 0 {
			var hs []string
			for _, h := range sortedByValue(holders) {
				if share := float64(holders[h]) / float64(holderTotal); share >= 0.01 || len(hs) == 0 {
					hs = append(hs, fmt.Sprintf("%s %.0f%%", h, 100*share))
				}
				if len(hs) == 3 {
					break
				}
			}
			evidence += "; held by " + strings.Join(hs, ", ") + " (the mutex profile's holders: the delay each release " +
				"caused); holding stack: " + sortedByValue(holderStacks)[0]
		}
		top := sortedByValue(s.stacks)
		evidence += "; waiting stack: " + top[0]
		f.Evidence = evidence
		switch s.kind {
		case "lock":
			f.Suggestion = "hold the lock for less: copy what the request needs under it and work outside it, shard it, or use " +
				"an RWMutex or atomic snapshot for reads"
		case "channel", "wait group", "condition":
			f.Suggestion = "requests wait for another goroutine here: a pool or queue of fixed size that the rate outgrew, or " +
				"work done one at a time; size it to the rate or do the work without the hand-off"
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WaitShare > out[j].WaitShare })
	return out
}

func sortedByValue(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// WallStates divide a wall-clock profile (fgprof) of the goroutines
// handling requests by what they were doing: "cpu" (running or runnable),
// "lock", "channel", "wait group", "condition", "sleep", "network" (the
// target waiting on a socket: a database, another service), "syscall" —
// so that off-CPU time with idle CPU is named for what it is.
func WallStates(wall *profile.Profile) map[string]float64 {
	code := frames.Code{MainModule: frames.MainModule(wall)}
	sts, _ := analyzers.Samples(wall, "", code)
	out := map[string]float64{}
	var total int64
	for _, st := range sts {
		if !inHandler(st) {
			continue
		}
		kind, _ := waitKind(st)
		if kind == "" {
			kind = "cpu"
			for _, fn := range st.Funcs[:min(len(st.Funcs), 8)] {
				switch {
				case strings.HasPrefix(fn, "internal/poll.") || strings.HasPrefix(fn, "net.(*conn).") || strings.HasPrefix(fn, "runtime.netpoll"):
					kind = "network"
				case strings.HasPrefix(fn, "syscall.") || strings.HasPrefix(fn, "internal/syscall"):
					if kind == "cpu" {
						kind = "syscall"
					}
				}
			}
		}
		out[kind] += float64(st.Value)
		total += st.Value
	}
	if total == 0 {
		return nil
	}
	for k := range out {
		out[k] /= float64(total)
	}
	return out
}
