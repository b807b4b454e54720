package analyzers

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/probehq/probe/lib/tokendiff"
)

// The evidence model: whether work could be done once, and where, is read
// from the replies. Per request key: did the same request get the same
// reply, or the same reply but for small fragments (a nonce, a timestamp,
// an order)? Across keys: did different requests get the same reply, one
// that differs only where it echoes the request, or a different one? And
// did the requests carry input at all?

// nearInvariant is the least share of a reply's bytes that every reply of
// its key must share for the rest to count as fragments.
const nearInvariant = 0.9

// acrossKeysCompared bounds the keys compared with the first.
const acrossKeysCompared = 8

// replyFacts are what a run's replies say.
type replyFacts struct {
	run      bool  // there was a run: replies to judge by
	keys     int   // keys with two requests or more
	requests int64 // their requests
	input    bool  // some request carried a query or a body
	bodies   bool  // some request carried a body
	// headers are the input header fields requests carried (Cookie,
	// Accept-Language, gRPC metadata); unvaried, those probe sent the same
	// in every request of a key.
	headers  []string
	unvaried []string
	varying  int  // keys whose replies changed
	near     bool // every varying key is the same but for fragments
	worst    tokendiff.Comparison
	across   string // "one" key, "identical", "echo" (differs only where it echoes the request) or "different"
	why      string // the evidence in words
}

func readReplies(rs []Replies) replyFacts {
	f := replyFacts{run: rs != nil, near: true, worst: tokendiff.Comparison{Size: 1, Stable: 1, Complete: true}}
	if !f.run {
		f.why = "no run to show that the replies did not change (profiles analysed alone)"
		return f
	}
	var keys []Replies
	most := int64(0)
	for _, r := range rs {
		most = max(most, r.Requests)
		f.input = f.input || r.Input
		f.bodies = f.bodies || r.BodyBytes > 0
		for _, n := range r.Headers {
			if !slices.ContainsFunc(f.headers, func(o string) bool { return strings.EqualFold(o, n) }) {
				f.headers = append(f.headers, n)
			}
		}
		if r.Requests >= 2 {
			keys = append(keys, r)
			f.requests += r.Requests
		}
	}
	f.keys = len(keys)
	f.unvaried = UnvariedHeaders(rs)
	if f.keys == 0 {
		f.why = fmt.Sprintf("too few requests per key to tell whether the replies change: the most any key got was %d, and the "+
			"evidence needs 2 per key "+
			"(run longer, --duration, or with more clients, --concurrency)", most)
		return f
	}
	var varyingKey string
	for _, k := range keys {
		if k.Distinct <= 1 {
			continue
		}
		f.varying++
		if len(k.Bodies) < 2 {
			f.near = false // nothing kept to compare
			continue
		}
		c := tokendiff.Compare(k.Bodies[0], k.Bodies[1:]...)
		if !c.Complete || c.StableShare() < nearInvariant {
			f.near = false
		}
		if varyingKey == "" || c.StableShare() < f.worst.StableShare() {
			f.worst, varyingKey = c, k.Key
		}
	}
	f.across = acrossKeys(keys)
	switch {
	case f.varying > 0 && f.near:
		f.why = fmt.Sprintf("replies identical except %s that %s per request (%d of %d request keys vary; %.0f%% of the reply is "+
			"the same every time, e.g. %s)",
			fragmentsInWords(f.worst), plural(len(f.worst.Fragments), "differs", "differ"), f.varying, f.keys, 100*f.worst.StableShare(),
			quoteFragment(f.worst))
	case f.varying > 0:
		f.why = fmt.Sprintf("%d of %d request keys got varying replies", f.varying, f.keys)
		if f.worst.Size > 1 {
			f.why += fmt.Sprintf(" (only %.0f%% of the reply is the same every time)", 100*f.worst.StableShare())
		}
	default:
		f.why = fmt.Sprintf("each of %d request keys got the same reply every time (%d requests)", f.keys, f.requests)
	}
	switch f.across {
	case "identical":
		if f.keys > 1 {
			f.why += ", and every key the same reply"
		}
	case "echo":
		f.why += ", and different keys' replies differ only where they echo the request"
	case "different":
		if f.input {
			f.why += ", and different keys got different replies"
		} else {
			f.why += "; the keys are requests without a query or a body, each a resource of the site"
		}
	case "one":
		if f.input {
			f.why += "; probe sent one request shape, so the reply could still depend on its input"
		}
	}
	return f
}

// acrossKeys compares the replies of different keys.
func acrossKeys(keys []Replies) string {
	if len(keys) == 1 {
		return "one"
	}
	same := true
	for _, k := range keys[1:] {
		same = same && k.Top == keys[0].Top
	}
	if same {
		return "identical"
	}
	first := keys[0]
	if len(first.Bodies) == 0 {
		return "different"
	}
	compared := 0
	for _, k := range keys[1:] {
		if k.Top == first.Top {
			continue
		}
		if len(k.Bodies) == 0 || compared == acrossKeysCompared {
			if len(k.Bodies) == 0 {
				return "different"
			}
			break
		}
		compared++
		if !EchoesOnly(first.Bodies[0], k.Bodies[0], first.Request, k.Request) {
			return "different"
		}
	}
	return "echo"
}

// EchoesOnly says whether reply b, to request reqB, is reply a, to reqA,
// but for the parts where it echoes its request: the same bytes, or 90%
// of a's bytes in b too and every fragment in which they differ within
// the part in which the two requests differ (a JSON-RPC id, a name). A
// reply that differs anywhere else is another answer: the request's input
// changed the result, not only its quotation.
func EchoesOnly(a, b []byte, reqA, reqB string) bool {
	if bytes.Equal(a, b) {
		return true
	}
	c := tokendiff.Compare(a, b)
	return c.Complete && c.StableShare() >= nearInvariant && echoes(c.Fragments, reqA, reqB)
}

// echoes says whether every fragment in which two replies differ is a
// part of the two requests where they differ: the reply quotes its input,
// and the rest of it does not depend on the input.
func echoes(frags []tokendiff.Fragment, reqA, reqB string) bool {
	req := tokendiff.Compare([]byte(reqA), []byte(reqB))
	for _, f := range frags {
		ok := false
		for _, r := range req.Fragments {
			if within(f.First, r.First) && within(f.Other, r.Other) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func within(part, whole string) bool {
	part = strings.TrimSpace(part)
	return part == "" || strings.Contains(whole, part)
}

func fragmentsInWords(c tokendiff.Comparison) string {
	n := len(c.Fragments)
	return fmt.Sprintf("%d %s of %d bytes", n, plural(n, "fragment", "fragments"), c.FragmentBytes())
}

func quoteFragment(c tokendiff.Comparison) string {
	for _, f := range c.Fragments {
		if s := strings.TrimSpace(f.First); s != "" {
			if len(s) > 40 {
				s = s[:40] + "…"
			}
			return fmt.Sprintf("%q", s)
		}
	}
	return "an insertion"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Scopes of work (a rule's "scope"): what part of a reply the work makes,
// which decides what a reply that differs in fragments allows.
const (
	scopePart  = "part"  // work that feeds a part of the reply: data, settings, templates, parsing (default)
	scopeWhole = "whole" // work over the whole reply: compressing or encoding it
	scopeToken = "token" // work that can itself make a small varying part: a hash, a token, a nonce
)

// OverReplyBytes: the rule's work makes the whole reply or a part that can
// vary (scope whole or token), so bytes that change per request are its
// input or its output.
func (r *Rule) OverReplyBytes() bool { return r.Scope == scopeWhole || r.Scope == scopeToken }

// InvariantPending ends the evidence of work invariant by nature whose
// input the profile did not show, on requests whose different inputs got
// different replies: the experiment settles it (a steady cost: load-time).
const InvariantPending = "until the experiment shows its cost steady across inputs"

// classify is the class a load-time rule's finding keeps, given the
// replies, with the evidence in words and the suggestion.
//
// Work that is invariant by nature (a template parse, a regexp compile) is
// movable to load time only when what it is given is constant; when the
// profiles show its input read from the request (inputFrom says how) or
// from storage, it is at most cacheable, per input.
func (f replyFacts) classify(r *Rule) (class, evidence, suggestion string) {
	return f.classifyInput(r, "")
}

func (f replyFacts) classifyInput(r *Rule, inputFrom string) (class, evidence, suggestion string) {
	if r.Invariant && inputFrom != "" {
		return "cacheable", fmt.Sprintf("what it is given comes from %s, not a constant, so probe claims it can be memoised per "+
				"input, not moved to load time", inputFrom),
			fmt.Sprintf("Memoise %s per input (keyed by the bytes it is given, or by the stored item and its version) and reuse "+
				"the result until the input changes.", r.What)
	}
	if r.Invariant && !r.PerItem && f.run && f.input && (f.across == "echo" || f.across == "different") {
		// Different inputs got different replies, and what the work is
		// given may be one of them: a query parameter read too cheaply to
		// be sampled looks like a constant in the profile.
		return "cacheable", "the profiles show its input read neither from the request nor from storage, but the requests " +
				"carry input (a query or a body) and different inputs got different replies, so probe claims it at most " +
				"cacheable " + InvariantPending,
			fmt.Sprintf("Memoise %s per input (keyed by what it is given) and reuse the result; if what it is given is a "+
				"constant, %s", r.What, strings.ToLower(r.Suggestion[:1])+r.Suggestion[1:])
	}
	if r.Invariant {
		return "load-time", "this work does not depend on the request: the profiles show its input read neither from the request " +
			"nor from storage (a literal or an embedded file)", r.Suggestion
	}
	scope := r.Scope
	if scope == "" {
		scope = scopePart
	}
	info := func() (string, string, string) {
		s := r.VaryingSuggestion
		if !f.run {
			s = "If its result does not change between requests: " + strings.ToLower(r.Suggestion[:1]) + r.Suggestion[1:]
		} else if s == "" {
			s = r.Suggestion
		}
		return "info", f.why + ", so probe does not claim this work can move to load time", s
	}
	cacheable := func() (string, string, string) {
		return "cacheable", f.why + ", so the work is a function of the input: probe claims it can be memoised per input, " +
				"not moved to load time",
			fmt.Sprintf("Memoise %s per input (keyed by what the request varies) and reuse it until the data changes; move it to "+
				"load time only if the inputs are few and known.", r.What)
	}
	switch {
	case !f.run || f.keys == 0:
		return info()
	case f.varying > 0 && !(f.near && scope == scopePart):
		return info()
	}
	loadTime := func() (string, string, string) {
		if len(f.headers) > 0 {
			// An input probe never varied is no evidence that the work
			// does not depend on it, and one the run varied with the same
			// reply says nothing of the work's cost per value (DESIGN.md,
			// the evidence model): only the experiment's variants do.
			why := NotVariedInWords(f.unvaried)
			if len(f.unvaried) == 0 {
				why = fmt.Sprintf("%s varied between probe's requests with one reply, but no variant measured the work's cost per value, "+
					"so probe claims it at most cacheable until the experiment varies %s", QuoteNames(f.headers),
					plural(len(f.headers), "it", "them"))
			}
			return "cacheable", f.why + "; " + why,
				fmt.Sprintf("Memoise %s per input (keyed by what the request carries, %s included) and reuse it until the data changes; "+
					"move it to load time only if the experiment shows it depends on none of them.", r.What, QuoteNames(f.headers))
		}
		s := r.Suggestion
		if f.varying > 0 {
			s += " Keep the fragment that varies per request out of it."
		}
		return "load-time", f.why, s
	}
	switch {
	case f.across == "identical":
		return loadTime()
	case !f.input:
		// Requests without a query or a body: each key is a resource of
		// the site (a page, a feed), the same reply every time; the set
		// is the one probe found, so the work can be done per resource at
		// load (its input headers aside: loadTime).
		return loadTime()
	case f.across == "echo" && scope == scopePart:
		return loadTime()
	}
	return cacheable()
}

// UnvariedHeaders are the input header fields the measured keys' requests
// carried with one value in every request of the key: inputs the run
// never varied, in the order first seen.
func UnvariedHeaders(rs []Replies) []string {
	var out []string
	for _, r := range rs {
		for _, n := range r.Headers {
			if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, n) }) &&
				!slices.ContainsFunc(r.HeadersVaried, func(o string) bool { return strings.EqualFold(o, n) }) {
				out = append(out, n)
			}
		}
	}
	return out
}

// maxNamesShown bounds the input names one sentence quotes.
const maxNamesShown = 6

// QuoteNames are names in backquotes, joined, the list bounded.
func QuoteNames(names []string) string {
	q := make([]string, 0, min(len(names), maxNamesShown)+1)
	for i, n := range names {
		if i == maxNamesShown {
			q = append(q, fmt.Sprintf("%d more", len(names)-maxNamesShown))
			break
		}
		q = append(q, "`"+n+"`")
	}
	return strings.Join(q, ", ")
}

// NotVariedInWords says that the work depends on nothing probe varied,
// naming the inputs probe sent unchanged.
func NotVariedInWords(names []string) string {
	return fmt.Sprintf("depends on nothing probe varied; %s %s not varied (sent the same in every request), and the work "+
		"may be keyed on %s "+
		"(a catalogue per language, a result per user), so probe claims it at most cacheable until a variant varies %s",
		QuoteNames(names), plural(len(names), "was", "were"), plural(len(names), "it", "them"), plural(len(names), "it", "them"))
}

// sortedKeys are a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
