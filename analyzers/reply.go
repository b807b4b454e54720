package analyzers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/probehq/probe/lib/frames"
)

// minReplyRequests is the fewest requests on which identical replies count.
const minReplyRequests = 20

// repeatedReply needs no frames: when every reply of each of the run's
// endpoints was byte-identical, the CPU the target's own handlers spent
// building them (sending them and reading files left out: a cached reply
// pays for the one, a static file is not built) is work whose result did
// not change. The frame rules say what it is made of.
func repeatedReply(r *Rule, s *samples, ev Evidence, facts replyFacts) *Finding {
	ops, why, class := identicalReplies(ev.Replies)
	if ops == 0 {
		return nil
	}
	w := newWeighed()
	cum := map[string]int64{} // per own function, the building samples under it
	depth := map[string]int64{}
	var handled, fromFiles int64
	for _, st := range s.cpu {
		if s.stopped() {
			return nil
		}
		if !st.serving {
			continue
		}
		if s.marked(st, markStorage) {
			fromFiles += st.value
		}
		if s.marked(st, markSending) || s.marked(st, markStorage) {
			handled += st.value
			continue
		}
		if doneOnce(st) || collecting(st) || plumbing(st) {
			continue
		}
		outer, n := -1, int64(0)
		seen := map[string]bool{}
		for k := len(st.funcs) - 1; k >= 0; k-- {
			if st.kinds[k] != frames.Own {
				continue
			}
			if outer < 0 {
				outer = k
			}
			fn := frames.DisplayName(st.funcs[k])
			if !seen[fn] {
				seen[fn] = true
				cum[fn] += st.value
				depth[fn] += n * st.value
			}
			n++
		}
		if outer < 0 {
			continue
		}
		w.count(st)
		w.add(st, outer, st.value)
	}
	// A reply read from a file is served, not built: what is left of its
	// handling (routing, headers) is the server's plumbing.
	if 3*fromFiles >= w.cpu+handled {
		return nil
	}
	f := s.finding(r, w, r.MinShare)
	if f == nil || w.cpu == 0 {
		return nil
	}
	// The handler that builds the reply: the deepest own function under
	// which nine tenths of the building happen (not the middleware that
	// wraps every handler).
	f.OwnFrame, f.Frames = "", nil
	var best float64
	for fn, c := range cum {
		if 10*c < 9*w.cpu {
			continue
		}
		if d := float64(depth[fn]) / float64(c); f.OwnFrame == "" || d > best || d == best && fn < f.OwnFrame {
			f.OwnFrame, best = fn, d
		}
	}
	f.Frames = []string{f.OwnFrame}
	f.AllocShare = share(s.replyAllocs(f.OwnFrame), s.allocTotal)
	f.Evidence = fmt.Sprintf("%s: %s, and the handlers spent %s of the target's CPU (%s of the CPU serving requests) building "+
		"them, sending them left out",
		r.What, why, pct(f.CPUShare), pct(f.CPUShareOfRequests))
	f.Class, f.Suggestion = class, r.Suggestion
	if class == "info" {
		f.Suggestion = thinSuggestion(r)
	}
	if class == "cacheable" {
		if unvaried := UnvariedHeaders(ev.Replies); len(unvaried) > 0 {
			f.Evidence += "; " + NotVariedInWords(unvaried)
		} else if slices.ContainsFunc(ev.Replies, func(r Replies) bool { return len(r.Headers) > 0 }) {
			f.Evidence += "; the requests' input headers varied with one reply, but no variant measured the work's cost per value"
		} else {
			f.Evidence += "; probe sent one request shape with input, so the reply could still depend on it"
		}
		f.Suggestion = r.VaryingSuggestion
	}
	return f
}

// plumbing says whether a sample is the server library's bookkeeping
// called by the innermost own frame (routing, reading and setting
// headers, parsing the URL: net/http, net/textproto, net/url). A reply
// served from memory costs that much in any server; it is not the reply
// being built.
func plumbing(st stack) bool {
	for k := range st.funcs {
		if st.kinds[k] != frames.Own {
			continue
		}
		if k == 0 {
			return false
		}
		switch frames.PkgPath(st.funcs[k-1]) {
		case "net/http", "net/textproto", "net/url":
			return true
		}
		return false
	}
	return false
}

// collecting says whether a sample is the garbage collector's work done
// by the goroutine that allocated (an assist): the collector's CPU, which
// gc-pressure counts, not the handler's.
func collecting(st stack) bool {
	for _, fn := range st.funcs {
		if strings.HasPrefix(fn, "runtime.gcAssistAlloc") || fn == "runtime.gcDrainN" {
			return true
		}
	}
	return false
}

// identicalReplies says whether every endpoint (operation) of the run got
// one and the same reply every time: how many endpoints, in words, and
// whether that proves the reply independent of the request (load-time) or
// only of a request probe never varied (cacheable).
func identicalReplies(rs []Replies) (ops int, why, class string) {
	byOp := map[string][]Replies{}
	var requests int64
	for _, r := range rs {
		byOp[r.Op] = append(byOp[r.Op], r)
		requests += r.Requests
	}
	if len(byOp) == 0 || requests < 2 {
		return 0, "", ""
	}
	class = "load-time"
	if requests < minReplyRequests {
		class = "info" // thin evidence: said out loud below
	}
	for _, op := range sortedKeys(byOp) {
		keys := byOp[op]
		for _, k := range keys {
			if k.Distinct != 1 || k.Top != keys[0].Top {
				return 0, "", ""
			}
		}
		if len(keys) == 1 && keys[0].Input && class == "load-time" {
			class = "cacheable"
		}
	}
	if class == "load-time" && slices.ContainsFunc(rs, func(r Replies) bool { return len(r.Headers) > 0 }) {
		class = "cacheable" // the same reply to input headers no variant varied
	}
	names := sortedKeys(byOp)
	shown := strings.Join(names[:min(3, len(names))], ", ")
	if len(names) > 3 {
		shown += fmt.Sprintf(" and %d more", len(names)-3)
	}
	why = fmt.Sprintf("every one of the %d replies of %s was byte-identical", requests, shown)
	if class == "info" {
		why += fmt.Sprintf(", but that is %d replies and the reply evidence needs %d (the endpoint is slow, or the run short): "+
			"probe does not claim the reply is the same every time", requests, minReplyRequests)
	}
	return len(names), why, class
}

// thinSuggestion is what to change when a run got too few replies to judge
// by, and what to do if more of them show the same.
func thinSuggestion(r *Rule) string {
	return "Run longer (--duration) or with more clients (--concurrency) until the endpoint gets " +
		fmt.Sprint(minReplyRequests) + " replies or more; if they are still byte-identical: " +
		strings.ToLower(r.Suggestion[:1]) + r.Suggestion[1:]
}

// replyAllocs are the bytes allocated building replies under own, the
// handler's frame: the allocation samples the CPU's building samples would
// be (not sending or reading files, not work done once) whose stack holds
// own (which makes them serving: no role is given to allocation samples).
func (s *samples) replyAllocs(own string) int64 {
	var sum int64
	for _, st := range s.allocs {
		if s.marked(st, markSending) || s.marked(st, markStorage) ||
			doneOnce(st) || collecting(st) || plumbing(st) {
			continue
		}
		for k, fn := range st.funcs {
			if st.kinds[k] == frames.Own && frames.DisplayName(fn) == own {
				sum += st.value
				break
			}
		}
	}
	return sum
}
