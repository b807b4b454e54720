package verdict

import (
	"fmt"
	"strings"
	"testing"

	"github.com/probehq/probe/analyzers"
	"github.com/probehq/probe/result"
)

// sortedReply is what an honest per-user sort answers: user n's own
// numbers, sorted, the same size for every user.
func sortedReply(user int) Kept {
	return Kept{request: fmt.Sprintf("GET /sorted?user=%d", user), input: true,
		body: []byte(fmt.Sprintf("user %d: 20000 numbers sorted; first %d, %d, %d; median %d\n", user, user, 2*user+1, 5*user+3, 50000+17*user))}
}

// configReply quotes its page and carries a nonce: the same answer for
// every page.
func configReply(page int, nonce string) Kept {
	return Kept{request: fmt.Sprintf("GET /config?page=%d", page), input: true,
		body: []byte(fmt.Sprintf("page %d of 800 settings, nonce %s\n", page, nonce))}
}

// experimentVariants are same-key, ignored-param (the same reply) and two
// other keys, as markReplies leaves them.
func experimentVariants(got []Kept) []Variant {
	vs := []Variant{{Name: "same-key"}, {Name: "ignored-param"}, {Name: "other-key-1", ShouldMatter: true},
		{Name: "other-key-2", ShouldMatter: true}}
	for i := range vs {
		if got[i].body != nil {
			vs[i].StableDigest = StableDigest(got[i].body)
		}
		vs[i].SameReply = i < 2 || vs[i].StableDigest == StableDigest(got[0].body)
		vs[i].Requests = 100
	}
	return vs
}

// Equal cost is not input independence: another user's sort of the same
// size gets another reply, and the replies say so, naming the parameter;
// replies that differ only where they quote the page, or in a nonce, are
// one answer.
func TestReadInputReplies(t *testing.T) {
	same := sortedReply(3)
	same.request += "&" + ignoredParam + "=1"
	got := []Kept{sortedReply(3), same, sortedReply(5), sortedReply(8)}
	ev := ReadInputReplies(&result.Run{}, nil, experimentVariants(got), got)
	if ev.Answered == "" || !strings.Contains(ev.Answered, "different values of `user` got different replies") ||
		!strings.Contains(ev.Answered, "function of `user`") || !strings.Contains(ev.Answered, "other-key-1 `GET /sorted?user=5`") {
		t.Errorf("per-user sorts: %+v", ev)
	}
	cfg := []Kept{configReply(1, "0f1e2d3c4b5a6978"), configReply(1, "a0b1c2d3e4f50617"), configReply(2, "1122334455667788"),
		configReply(3, "99aabbccddeeff00")}
	cfg[1].request += "&" + ignoredParam + "=1"
	if ev := ReadInputReplies(&result.Run{}, nil, experimentVariants(cfg), cfg); ev.Answered != "" || !ev.Echoed {
		t.Errorf("pages that quote the page and carry a nonce: %+v, want no other answer, an echo", ev)
	}
	// A parameter the server reads (ignored-param answered otherwise) is an
	// input like another key.
	read := []Kept{sortedReply(3), {request: "GET /sorted?user=3&probe-experiment=1", input: true,
		body: []byte("no such option: probe-experiment\n")},
		sortedReply(3), sortedReply(3)}
	vs := experimentVariants(read)
	vs[1].SameReply = false
	if ev := ReadInputReplies(&result.Run{}, nil, vs, read); !strings.Contains(ev.Answered, "`"+ignoredParam+"`") {
		t.Errorf("a parameter the server reads, answered otherwise: %+v", ev)
	}
	// Two headers varied together (other-header): the replies cannot say
	// which one counts, and the words do not pretend they can.
	vs = experimentVariants(read)
	vs[1].SameReply, vs[1].Varies = false, []string{"Accept-Language", "User-Agent"}
	if ev := ReadInputReplies(&result.Run{}, nil, vs, read); !strings.Contains(ev.Answered,
		"function of at least one of `Accept-Language`, `User-Agent`") {
		t.Errorf("two headers varied together: %+v", ev)
	}
	// Pages of the site without a query or a body are resources, each its
	// own reply by nature.
	page := func(p string) Kept { return Kept{request: "GET " + p, body: []byte("<h1>" + p + "</h1>")} }
	pages := []Kept{page("/about"), {request: "GET /about?probe-experiment=1", input: true, body: page("/about").body}, page("/blog"),
		page("/tags")}
	if ev := ReadInputReplies(&result.Run{}, nil, experimentVariants(pages), pages); ev.Answered != "" {
		t.Errorf("resources of the site: %+v", ev)
	}
	// A variant that failed, or kept no reply, says nothing.
	none := []Kept{sortedReply(3), same, {request: "GET /sorted?user=5"}, sortedReply(8)}
	vs = experimentVariants(none)
	vs[3].Error = "no request was sent"
	if ev := ReadInputReplies(&result.Run{}, nil, vs, none); ev.Answered != "" {
		t.Errorf("no reply kept, or a failed variant: %+v", ev)
	}
}

// The main run's replies count too: the busiest key against the others of
// its operation, each key stable once its nonces are masked.
func TestReadInputRepliesOfTheRun(t *testing.T) {
	digest := func(k Kept, top uint64, bodies ...[]byte) result.Digest {
		if len(bodies) == 0 {
			bodies = [][]byte{k.body}
		}
		key := strings.TrimPrefix(k.request, "GET ")
		return result.Digest{Key: key, Op: "GET /sorted", Requests: 100, Distinct: len(bodies), Top: top, Input: true, Request: k.request,
			Bodies: bodies}
	}
	run := &result.Run{Digests: []result.Digest{digest(sortedReply(3), 3), digest(sortedReply(5), 5)}}
	base := run.Digests[0]
	ev := ReadInputReplies(run, &base, nil, nil)
	if !strings.Contains(ev.Answered, "in the main run, `GET /sorted?user=5` got another reply than `GET /sorted?user=3`") ||
		!strings.Contains(ev.Answered, "function of `user`") {
		t.Errorf("the run's per-user sorts: %+v", ev)
	}
	// A key whose own replies vary beyond nonces says nothing by differing.
	shuffled := digest(sortedReply(5), 5, sortedReply(5).body, []byte("user 5: numbers in another order\n"))
	run = &result.Run{Digests: []result.Digest{base, shuffled}}
	if ev := ReadInputReplies(run, &base, nil, nil); ev.Answered != "" {
		t.Errorf("a key of varying replies: %+v", ev)
	}
	// Pages of the site without input are resources, each its own reply.
	page := func(p string, top uint64) result.Digest {
		return result.Digest{Key: p, Op: "GET pages", Requests: 100, Distinct: 1, Top: top, Request: "GET " + p,
			Bodies: [][]byte{[]byte("<h1>" + p + "</h1>")}}
	}
	run = &result.Run{Digests: []result.Digest{page("/about", 1), page("/blog", 2)}}
	base = run.Digests[0]
	if ev := ReadInputReplies(run, &base, nil, nil); ev.Answered != "" {
		t.Errorf("resources of the site: %+v", ev)
	}
	// Nonces masked and the page quoted: one answer.
	a, b := configReply(1, "0f1e2d3c4b5a6978"), configReply(2, "a0b1c2d3e4f50617")
	run = &result.Run{Digests: []result.Digest{digest(a, 1), digest(b, 2)}}
	run.Digests[0].Op, run.Digests[1].Op = "GET /config", "GET /config"
	base = run.Digests[0]
	if ev := ReadInputReplies(run, &base, nil, nil); ev.Answered != "" || !ev.Echoed {
		t.Errorf("pages that quote the page: %+v", ev)
	}
}

// The class is decided from the evidence: a steady cost with another
// answer for another input is at most cacheable, with the reason; a cost
// that moves stays moves-with-input; the controls' rules come first.
func TestExperimentEqualCostIsNotInputIndependence(t *testing.T) {
	got := []Kept{sortedReply(3), sortedReply(3), sortedReply(5), sortedReply(8)}
	vs := experimentVariants(got)
	replies := ReadInputReplies(&result.Run{}, nil, vs, got)
	work := func(ms ...float64) Frame { return workFrame("slices.Sort[...]", 300, ms...) }
	for _, class := range []string{"cacheable", "info"} {
		c, v, _, why := verdict(class, work(1, 1.02, 0.98, 1.01), vs, "", false, replies)
		if c != "cacheable" || v != "replies-with-input" || !strings.Contains(why, "function of `user`") || !strings.Contains(why,
			"never moved to load time") {
			t.Errorf("%s: equal cost, another reply per user: %s (%s): %s", class, c, v, why)
		}
	}
	if _, v, _, why := verdict("cacheable", work(1, 1, 2.5, 1), vs, "", false, replies); v != "moves-with-input" {
		t.Errorf("a cost that moves: %s: %s", v, why)
	}
	if c, v, _, why := verdict("info", work(1, 2, 1, 1), vs, "", false, replies); v != "inconclusive" || c != "info" {
		t.Errorf("a control that moved: %s %s: %s", c, v, why)
	}
	// Without another answer the same figures are load-time, as before.
	if c, v, _, why := verdict("cacheable", work(1, 1.02, 0.98, 1.01), vs, "", false, ReplyEvidence{Echoed: true}); c != "load-time" ||
		v != "input-independent" || !strings.Contains(why, "only where they quote the request") {
		t.Errorf("replies that quote the request: %s %s: %s", c, v, why)
	}
	f := analyzers.Finding{Rule: "repeated-sort", Class: "cacheable", Evidence: "sorting; different keys got different replies"}
	ef := Finding{Verdict: "replies-with-input", Class: "cacheable", Why: "the experiment: … function of `user` …"}
	Apply(&f, ef, nil)
	if f.Class != "cacheable" || !strings.Contains(f.Evidence, "function of `user`") || !strings.Contains(f.Suggestion, "Memoise") {
		t.Errorf("the finding after the verdict: %+v", f)
	}
}

// A request's inputs by name: the query's parameters, the path, the body.
func TestDifferingInputs(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"GET /sorted?user=3", "GET /sorted?user=5", "user"},
		{"GET /sorted?user=3&x=1", "GET /sorted?user=3&x=1&probe-experiment=1", "probe-experiment"},
		{"GET /a?x=1", "GET /b?x=2", "path,x"},
		{`POST /rpc {"id":1}`, `POST /rpc {"id":2}`, "body"},
		{"GET /same", "GET /same", ""},
	} {
		if got := strings.Join(differingInputs(tc.a, tc.b), ","); got != tc.want {
			t.Errorf("%q vs %q: %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

// A gRPC call's body is its message: another message that got another
// reply is named as such, not as a body.
func TestReadInputRepliesNamesTheMessage(t *testing.T) {
	call := func(q string, total int) Kept {
		return Kept{request: "POST /probe.fixture.Notes/Search \x00\x00\x00\x00\x06\n\x04" + q, input: true, grpc: true,
			body: []byte(fmt.Sprintf("\x00\x00\x00\x00\x03\x10%c\x01 median of the numbers of this call %d", rune(total), total))}
	}
	got := []Kept{call("gzip", 7), call("gzip", 7), call("tags", 9), call("code", 11)}
	ev := ReadInputReplies(&result.Run{}, nil, experimentVariants(got), got)
	if !strings.Contains(ev.Answered, "different values of `the message` got different replies") || strings.Contains(ev.Answered, "`body`") {
		t.Errorf("another gRPC message, another reply: %+v", ev)
	}
}
