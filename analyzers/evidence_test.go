package analyzers

import (
	"fmt"
	"strings"
	"testing"
)

// page makes an HTML page around a body, with a sidebar in the given order
// and a nonce.
func page(body, nonce string, sidebar ...string) []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><title>Notes</title><meta name="csrf" content="` + nonce + `"></head><body><nav>`)
	for _, s := range sidebar {
		fmt.Fprintf(&b, `<a href="/%s">%s</a>`, s, s)
	}
	b.WriteString("</nav><main>" + body + strings.Repeat(" Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
		40) + "</main></body></html>")
	return []byte(b.String())
}

func dbRule() *Rule {
	for _, r := range DefaultRules() {
		if r.ID == "repeated-db-query" {
			return &r
		}
	}
	panic("no rule")
}

func rule(id string) *Rule {
	for _, r := range DefaultRules() {
		if r.ID == id {
			return &r
		}
	}
	panic("no rule " + id)
}

// A nonce or a shuffled sidebar around invariant work: the work is still
// claimed, with the fragments named.
func TestRepliesIdenticalButForFragments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bodies [][]byte
	}{
		{"nonce", [][]byte{page("x", "n0nce1111"), page("x", "n0nce2222"), page("x", "n0nce3333")}},
		{"shuffle", [][]byte{page("x", "k", "a", "b", "c", "d"), page("x", "k", "c", "a", "d", "b"), page("x", "k", "d", "c", "b", "a")}},
	} {
		facts := readReplies([]Replies{{Key: "/", Op: "GET /", Requests: 300, Distinct: 290, Top: 1, Bodies: tc.bodies}})
		class, why, suggestion := facts.classify(dbRule())
		if class != "load-time" || !strings.Contains(why, "replies identical except") || !strings.Contains(suggestion, "fragment that varies") {
			t.Errorf("%s: %s, %s", tc.name, class, why)
		}
		// Whole-reply work cannot move when the reply differs, however little.
		if class, _, _ := facts.classify(rule("repeated-gzip")); class != "info" {
			t.Errorf("%s: gzip of a varying reply is %s", tc.name, class)
		}
		// Nor can work that may make the fragment.
		if class, _, _ := facts.classify(rule("repeated-hash")); class != "info" {
			t.Errorf("%s: a hash beside a nonce is %s", tc.name, class)
		}
	}
	// Replies that differ in most of their bytes are no fragments.
	facts := readReplies([]Replies{{Key: "/", Requests: 300, Distinct: 300, Top: 1,
		Bodies: [][]byte{[]byte("alpha beta gamma"), []byte("one two three four")}}})
	if class, why, _ := facts.classify(dbRule()); class != "info" {
		t.Errorf("varying replies: %s (%s)", class, why)
	}
}

// A pure function of a parameter is cacheable, never load-time; replies
// that differ only where they echo the request are input-independent.
func TestAcrossKeys(t *testing.T) {
	token := func(user string) Replies {
		body := fmt.Sprintf(`{"user":"%s","token":"%x"}`, user, []byte(user+"-secret-derived-value"))
		return Replies{Key: "user=" + user, Op: "GET /token", Requests: 50, Distinct: 1, Top: uint64(len(user))*31 + uint64(user[0]), Input: true,
			Request: "GET /token?user=" + user, Bodies: [][]byte{[]byte(body)}}
	}
	facts := readReplies([]Replies{token("alice"), token("bob"), token("carol")})
	for _, id := range []string{"repeated-hash", "repeated-db-query", "repeated-json-encode"} {
		if class, why, _ := facts.classify(rule(id)); class != "cacheable" {
			t.Errorf("derived token, %s: %s (%s)", id, class, why)
		}
	}
	rpc := func(id int) Replies {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`, id)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[%s]}}`, id,
			strings.Repeat(`{"name":"search","inputSchema":{"type":"object"}},`, 50))
		return Replies{Key: fmt.Sprint("id=", id), Op: "tools/list", Requests: 50, Distinct: 1, Top: uint64(id), Input: true, BodyBytes: len(req),
			Request: "POST /mcp " + req, Bodies: [][]byte{[]byte(body)}}
	}
	facts = readReplies([]Replies{rpc(2), rpc(3), rpc(4)})
	if class, why, _ := facts.classify(rule("repeated-schema")); class != "load-time" || !strings.Contains(why, "echo the request") {
		t.Errorf("replies that echo the id: %s (%s)", class, why)
	}
	if class, _, _ := facts.classify(rule("repeated-json-encode")); class != "cacheable" {
		t.Errorf("encoding a reply that echoes the id: %s", class)
	}
	// One request shape with input: the same reply proves nothing about
	// other inputs.
	facts = readReplies([]Replies{rpc(2)})
	if class, _, _ := facts.classify(rule("repeated-schema")); class != "cacheable" {
		t.Errorf("one request with input: %s", class)
	}
	// One request without input: the reply depends on nothing it sends.
	facts = readReplies([]Replies{{Key: "/sitemap.xml", Requests: 50, Distinct: 1, Top: 9}})
	if class, _, _ := facts.classify(rule("repeated-gzip")); class != "load-time" {
		t.Errorf("one input-free request: %s", class)
	}
}

var feedHandler = []string{"own:app.buildItems", "own:app.feedHandler", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve"}

func TestRepeatedReply(t *testing.T) {
	p := newProfile("cpu").
		add(5*sec, append([]string{"strings.(*Builder).WriteString"}, feedHandler...)...).
		add(2*sec, append([]string{"html.EscapeString"}, feedHandler...)...).
		add(2*sec, "syscall.Syscall", "internal/poll.(*FD).Write", "net.(*conn).Write", "net/http.(*response).Write",
			"own:app.feedHandler", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve").
		add(1*sec, "net/http.(*conn).readRequest", "net/http.(*conn).serve").p
	same := []Replies{{Key: "/feed.xml", Op: "GET /feed.xml", Requests: 400, Distinct: 1, Top: 5}}
	res := Analyze(p, nil, Evidence{Replies: same}, DefaultRules())
	f := find(res.Findings, "repeated-reply")
	if f == nil || f.Class != "load-time" || f.CPUShare < 0.69 || f.CPUShare > 0.71 || f.OwnFrame != "app.buildItems" || f.Suggestion == "" {
		t.Fatalf("repeated reply: %+v", f)
	}
	// It explains the reply, not its parts: the own code stays unexplained.
	if len(res.Unexplained) == 0 || res.Unexplained[0].Function != "app.buildItems" || res.Unexplained[0].CPUShare < 0.69 ||
		strings.Join(res.Unexplained[0].Path, " → ") != "app.feedHandler → app.buildItems" {
		t.Errorf("unexplained %+v", res.Unexplained)
	}
	// Replies that vary: no such finding.
	vary := []Replies{{Key: "/feed.xml", Op: "GET /feed.xml", Requests: 400, Distinct: 2, Top: 5}}
	if f := find(Analyze(p, nil, Evidence{Replies: vary}, DefaultRules()).Findings, "repeated-reply"); f != nil {
		t.Errorf("varying replies: %+v", f)
	}
	// No run: no such finding.
	if f := find(Analyze(p, nil, Evidence{}, DefaultRules()).Findings, "repeated-reply"); f != nil {
		t.Errorf("no run: %+v", f)
	}
}

var jsonHandler = []string{"own:app.handleRPC", "github.com/valyala/fasthttp.(*Server).serveConn"}

// Decoding what arrives with the request is never movable.
func TestRequestDecodingIsNotClaimed(t *testing.T) {
	p := newProfile("cpu").
		add(6*sec, append([]string{"encoding/json.(*decodeState).object", "encoding/json.Unmarshal"}, jsonHandler...)...).
		add(4*sec, jsonHandler...).p
	// The run posted bodies: the decode is the request's.
	posted := []Replies{{Key: "rpc", Op: "POST /rpc", Requests: 300, Distinct: 1, Top: 1, Input: true, BodyBytes: 80, Request: "POST /rpc {}"}}
	f := find(Analyze(p, nil, Evidence{Replies: posted}, DefaultRules()).Findings, "repeated-json-decode")
	if f == nil || f.Class != "info" || !strings.Contains(f.Evidence, "arrives with each request") || f.CPUShareOfRequests < 0.59 {
		t.Fatalf("posted body: %+v", f)
	}
	// A decoder on the request body, seen in the profile.
	body := newProfile("cpu").
		add(6*sec, append([]string{"encoding/json.(*Decoder).Decode"}, "own:app.handle", "net/http.HandlerFunc.ServeHTTP",
			"net/http.(*conn).serve")...).
		add(1*sec, append([]string{"net/http.(*body).Read", "encoding/json.(*Decoder).refill", "encoding/json.(*Decoder).Decode"},
			"own:app.handle", "net/http.(*conn).serve")...).
		add(3*sec, "own:app.handle", "net/http.(*conn).serve").p
	get := []Replies{{Key: "/x", Op: "GET /x", Requests: 300, Distinct: 1, Top: 1}}
	if f := find(Analyze(body, nil, Evidence{Replies: get}, DefaultRules()).Findings, "repeated-json-decode"); f == nil || f.Class != "info" {
		t.Errorf("decoder on the request body: %+v", f)
	}
	// Beside it, a little decoding of other data (below a finding's least
	// share): pprof's focus on the frames counts it, so the finding says it.
	mixed := newProfile("cpu").
		add(6*sec, append([]string{"net/http.(*body).Read", "encoding/json.(*Decoder).refill", "encoding/json.(*Decoder).Decode"},
			"own:app.handle", "net/http.(*conn).serve")...).
		add(sec*3/10, "encoding/json.Unmarshal", "own:app.readSettings", "own:app.handle", "net/http.(*conn).serve").
		add(sec*37/10, "own:app.handle", "net/http.(*conn).serve").p
	f = find(Analyze(mixed, nil, Evidence{Replies: get}, DefaultRules()).Findings, "repeated-json-decode")
	if f == nil || f.Class != "info" || f.CPUShare < 0.59 || f.CPUShare > 0.61 || !strings.Contains(f.Evidence,
		"a further 3% of the CPU is this work on other data") {
		t.Errorf("the request's body and a little other decoding: %+v", f)
	}
	// Decoding inside another rule's work (the MCP SDK's AddTool remarshals
	// each tool's schema) is that rule's; pprof's focus on the decoding
	// frames counts it too, so the finding says where it went.
	inside := newProfile("cpu").
		add(6*sec, append([]string{"net/http.(*body).Read", "encoding/json.(*Decoder).refill", "encoding/json.(*Decoder).Decode"},
			"own:app.handle", "net/http.(*conn).serve")...).
		add(sec, "encoding/json.Unmarshal", "github.com/modelcontextprotocol/go-sdk/mcp.remarshal",
			"github.com/modelcontextprotocol/go-sdk/mcp.(*Server).AddTool", "own:app.buildServer", "own:app.handle", "net/http.(*conn).serve").
		add(3*sec, "own:app.handle", "net/http.(*conn).serve").p
	f = find(Analyze(inside, nil, Evidence{Replies: get}, DefaultRules()).Findings, "repeated-json-decode")
	if f == nil || !strings.Contains(f.Evidence, "a further 10% of the CPU is this work inside the work of repeated-schema") {
		t.Errorf("decoding inside the schema rule's work: %+v", f)
	}
	// Behind layers of middleware (own code every request passes through)
	// the library's decode of a posted body is still the request's.
	mw := []string{"own:app.withAuth.func1", "own:app.withLog.func1", "own:app.withDeadline.func1", "net/http.HandlerFunc.ServeHTTP",
		"net/http.(*conn).serve"}
	layered := newProfile("cpu").
		add(6*sec, append([]string{"encoding/json.Unmarshal", "github.com/acme/rpc.readBatch",
			"github.com/acme/rpc.(*Handler).ServeHTTP"}, mw...)...).
		add(4*sec, append([]string{"github.com/acme/rpc.(*Handler).ServeHTTP"}, mw...)...).p
	if f := find(Analyze(layered, nil, Evidence{Replies: posted}, DefaultRules()).Findings,
		"repeated-json-decode"); f == nil || f.Class != "info" {
		t.Errorf("a posted body decoded behind middleware: %+v", f)
	}
	// A cheap endpoint: much of the serving CPU is net/http reading
	// requests and flushing replies, under no own code at all. The
	// middleware is still what wraps the handler's samples.
	cheap := newProfile("cpu").
		add(3*sec, append([]string{"encoding/json.Unmarshal", "github.com/acme/rpc.readBatch",
			"github.com/acme/rpc.(*Handler).ServeHTTP"}, mw...)...).
		add(2*sec, append([]string{"github.com/acme/rpc.(*Handler).ServeHTTP"}, mw...)...).
		add(4*sec, "net/http.(*conn).readRequest", "net/http.(*conn).serve").
		add(1*sec, "net/http.(*response).finishRequest", "net/http.(*conn).serve").p
	if f := find(Analyze(cheap, nil, Evidence{Replies: posted}, DefaultRules()).Findings,
		"repeated-json-decode"); f == nil || f.Class != "info" {
		t.Errorf("a posted body decoded behind middleware, on a cheap endpoint: %+v", f)
	}
	// Decoding inside an interpreter that does not serve the request (the
	// notes a Jsonnet query parses, given to it by the server) is not the
	// body's, though the requests carried bodies.
	interp := newProfile("cpu").
		add(6*sec, append([]string{"encoding/json.Unmarshal", "github.com/google/go-jsonnet.builtinParseJSON",
			"github.com/google/go-jsonnet.(*unaryBuiltin).evalCall"}, "own:app.evaluate", "own:app.handleQuery",
			"net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve")...).
		add(4*sec, "own:app.handleQuery", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve").p
	if f := find(Analyze(interp, nil, Evidence{Replies: posted}, DefaultRules()).Findings,
		"repeated-json-decode"); f == nil || f.Class == "info" {
		t.Errorf("an interpreter's own data, decoded while requests carry bodies: %+v", f)
	}
	// Config decoded on every GET is the waste the rule is for.
	cfg := newProfile("cpu").
		add(6*sec, append([]string{"encoding/json.Unmarshal"}, "own:app.loadConfig", "own:app.handle", "net/http.(*conn).serve")...).
		add(4*sec, "own:app.handle", "net/http.(*conn).serve").p
	if f := find(Analyze(cfg, nil, Evidence{Replies: get}, DefaultRules()).Findings,
		"repeated-json-decode"); f == nil || f.Class != "load-time" || f.OwnFrame != "app.loadConfig" {
		t.Errorf("config per request: %+v", f)
	}
}

// An allocation profile lags by up to a GC cycle: allocations with no CPU
// sample through the same work make no finding.
func TestAllocationsAloneMakeNoFinding(t *testing.T) {
	cpu := newProfile("cpu").add(10*sec, handler...).p
	allocs := newProfile("alloc_space").add(900, append([]string{"encoding/xml.Marshal"}, handler...)...).add(100, handler...).p
	ev := Evidence{Replies: []Replies{{Key: "/s", Op: "GET /s", Requests: 100, Distinct: 1, Top: 1}}}
	if f := find(Analyze(cpu, allocs, ev, DefaultRules()).Findings, "repeated-xml-encode"); f != nil {
		t.Errorf("allocations of another run: %+v", f)
	}
	// Without a CPU profile at all, allocations are all there is.
	if f := find(Analyze(nil, allocs, ev, DefaultRules()).Findings, "repeated-xml-encode"); f == nil {
		t.Error("an allocation profile alone found nothing")
	}
}

// A loop that computes or formats is no scan; a walk over a map is.
func TestFullScanNeedsAWalk(t *testing.T) {
	arith := newProfile("cpu").add(9*sec, "own:app.fib", "own:app.handle", "net/http.(*conn).serve").add(1*sec, handler...).p
	if f := find(Analyze(arith, nil, Evidence{}, DefaultRules()).Findings, "per-request-full-scan"); f != nil {
		t.Errorf("arithmetic taken for a scan: %+v", f)
	}
	logLine := newProfile("cpu").
		add(5*sec, "fmt.(*pp).doPrintf", "fmt.Sprintf", "own:app.logLine", "own:app.handle", "net/http.(*conn).serve").
		add(4*sec, "strconv.AppendInt", "own:app.logLine", "own:app.handle", "net/http.(*conn).serve").p
	if f := find(Analyze(logLine, nil, Evidence{}, DefaultRules()).Findings, "per-request-full-scan"); f != nil {
		t.Errorf("formatting taken for a scan: %+v", f)
	}
	walk := newProfile("cpu").
		add(6*sec, "runtime.mapiternext", "own:app.(*Store).countTags", "own:app.handle.func1", "net/http.(*conn).serve").
		add(2*sec, "own:app.(*Store).countTags", "own:app.handle.func1", "net/http.(*conn).serve").
		add(2*sec, "own:app.handle.func1", "net/http.(*conn).serve").p
	f := find(Analyze(walk, nil, Evidence{}, DefaultRules()).Findings, "per-request-full-scan")
	if f == nil || f.OwnFrame != "app.(*Store).countTags" {
		t.Errorf("a walk over a map: %+v", f)
	}
}

// A binary built with -trimpath names standard files without GOROOT: its
// reflect frames are not the target's own code.
func TestTrimpathStandardLibraryIsNotOwnCode(t *testing.T) {
	p := newProfile("cpu").add(8*sec, "reflect.Value.Call", "own:app.handle", "net/http.(*conn).serve").add(2*sec, handler...).p
	for i := range p.Function {
		if p.Function[i].Name == "reflect.Value.Call" {
			p.Function[i].Filename = "reflect/value.go"
		}
	}
	res := Analyze(p, nil, Evidence{}, DefaultRules())
	if f := find(res.Findings, "per-request-full-scan"); f != nil {
		t.Errorf("reflect taken for own code: %+v", f)
	}
	if len(res.Unexplained) == 0 || res.Unexplained[0].Function != "app.handle" {
		t.Errorf("unexplained %+v", res.Unexplained)
	}
}

// A path through dozens of middleware frames is shown by its inner end,
// with a count of what it leaves out; a short one whole.
func TestUnexplainedPathTail(t *testing.T) {
	u := Unexplained{Path: []string{"a", "b", "c", "d", "e", "f"}}
	if got := u.PathTail(3, " → "); got != "(3 outer frames) → d → e → f" {
		t.Errorf("tail %q", got)
	}
	if got := u.PathTail(6, " → "); got != "a → b → c → d → e → f" {
		t.Errorf("whole %q", got)
	}
}

// Equal cost is not input independence: each user's own numbers sorted,
// the same size for every user, each user its own stable reply. The
// replies alone make the sort a function of the input (cacheable), and
// EchoesOnly, which the experiment judges its variants by, tells such a
// reply from one that only quotes its request.
func TestPerUserRepliesAreNoEcho(t *testing.T) {
	sorted := func(user int) Replies {
		body := fmt.Sprintf("user %d: 20000 numbers, smallest %d, median %d, largest %d\n", user, 3*user, 50000+7*user, 99999-user)
		return Replies{Key: fmt.Sprint("user=", user), Op: "GET /sorted", Requests: 60, Distinct: 1, Top: uint64(user), Input: true,
			Request: fmt.Sprint("GET /sorted?user=", user), Bodies: [][]byte{[]byte(body)}}
	}
	keys := []Replies{sorted(1), sorted(2), sorted(3)}
	facts := readReplies(keys)
	for _, id := range []string{"repeated-sort", "per-request-full-scan"} {
		class, why, _ := facts.classify(rule(id))
		if class != "cacheable" || !strings.Contains(why, "different keys got different replies") {
			t.Errorf("%s on per-user sorts: %s (%s)", id, class, why)
		}
	}
	a, b := keys[0], keys[1]
	if EchoesOnly(a.Bodies[0], b.Bodies[0], a.Request, b.Request) {
		t.Errorf("two users' sorted numbers were taken for an echo of the user")
	}
	echo := func(user int) []byte {
		return []byte(fmt.Sprintf("user %d: 20000 settings loaded, version 7, theme dark\n", user))
	}
	if !EchoesOnly(echo(1), echo(2), a.Request, b.Request) {
		t.Errorf("replies that differ only in the user they quote were taken for other answers")
	}
	if !EchoesOnly(echo(1), echo(1), a.Request, b.Request) {
		t.Errorf("the same bytes are no other answer")
	}
}

// An input probe never varied is no evidence of none (issue 35): pages
// of one path, each the same reply every time, are load-time only when
// the requests carried no input header; an Accept-Language or a Cookie
// sent unchanged keeps the claim at most cacheable, the header named. One
// the run did vary (another value per session) is not named.
func TestUnvariedHeaderIsNoEvidence(t *testing.T) {
	page := func(path string, headers, varied []string) Replies {
		return Replies{Key: path, Op: "GET " + path, Requests: 80, Distinct: 1, Top: uint64(len(path)), Request: "GET " + path,
			Bodies: [][]byte{[]byte("catalogue of " + path)}, Headers: headers, HeadersVaried: varied}
	}
	plain := readReplies([]Replies{page("/a", nil, nil), page("/b", nil, nil)})
	if class, why, _ := plain.classify(rule("repeated-json-encode")); class != "load-time" {
		t.Fatalf("pages without input headers: %s (%s)", class, why)
	}
	for _, hs := range [][]string{{"Accept-Language"}, {"Cookie", "Accept-Language"}} {
		facts := readReplies([]Replies{page("/a", hs, nil), page("/b", hs, nil)})
		class, why, suggestion := facts.classify(rule("repeated-json-encode"))
		if class != "cacheable" || !strings.Contains(why, "depends on nothing probe varied; `"+hs[0]+"`") ||
			!strings.Contains(suggestion, "`"+hs[0]+"`") {
			t.Errorf("%v sent unchanged: %s (%s) %s", hs, class, why, suggestion)
		}
	}
	// A cookie that varied between requests of the key with one reply is
	// not named as unvaried, but the work's cost per value was never
	// measured: still at most cacheable.
	facts := readReplies([]Replies{page("/a", []string{"Cookie"}, []string{"Cookie"})})
	if class, why, _ := facts.classify(rule("repeated-json-encode")); class != "cacheable" || strings.Contains(why,
		"`Cookie` was not varied") ||
		!strings.Contains(why, "`Cookie` varied between probe's requests") {
		t.Errorf("a varied cookie: %s (%s)", class, why)
	}
	// The whole reply the same every time: the repeated-reply finding is
	// cacheable, the header named.
	p := newProfile("cpu").add(5*sec, append([]string{"strings.(*Builder).WriteString"}, feedHandler...)...).p
	res := Analyze(p, nil, Evidence{Replies: []Replies{page("/feed.xml", []string{"Accept-Language"}, nil)}}, DefaultRules())
	if f := find(res.Findings, "repeated-reply"); f == nil || f.Class != "cacheable" || !strings.Contains(f.Evidence,
		"`Accept-Language` was not varied") {
		t.Errorf("repeated reply to an unvaried Accept-Language: %+v", f)
	}
}
