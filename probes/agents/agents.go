package agents

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/probes"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options say how many agents, how hard and how long.
type Options struct {
	Endpoint    string      // the MCP endpoint's URL
	Header      http.Header // sent with every request (the target's standing header)
	Keys        []string    // bearer tokens: agent i takes Keys[i % len]; none: Header alone
	Agents      int         // default 32
	Projects    int         // default 1; agent i works in project i % Projects
	Contended   int         // items per project the writes share (default 20)
	Weights     Weights     // default DefaultWeights
	Duration    time.Duration
	Warmup      time.Duration
	Timeout     time.Duration // one call (default 30s)
	FreshWithin time.Duration // how long the last write of an item may take to be found (default 2s)
	MaxReply    int64         // largest reply body (default 16 MiB)
	// Window, when set, runs while the measured window is open (the
	// target's profiles); the run waits for it to return.
	Window func(ctx context.Context, d time.Duration)
}

func (o *Options) defaults() {
	if o.Agents <= 0 {
		o.Agents = 32
	}
	if o.Projects <= 0 {
		o.Projects = 1
	}
	if o.Contended <= 0 {
		o.Contended = 20
	}
	if o.Weights == nil {
		o.Weights = DefaultWeights
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.FreshWithin <= 0 {
		o.FreshWithin = 2 * time.Second
	}
	if o.MaxReply <= 0 {
		o.MaxReply = 16 << 20
	}
}

// Outcomes of a call that failed, as the report counts them.
const (
	JSONRPCError = "jsonrpc-error" // the server answered with a JSON-RPC error
	ToolError    = "tool-error"    // the tool's result has isError
	Transport    = "transport"     // no reply: the connection, HTTP, a reply that is no JSON-RPC
	Timeout      = "timeout"       // no reply within the call's timeout
	BadResult    = "bad-result"    // a result without what the load reads from it (a write's version)
)

// Outcomes are the failed-call kinds in the report's order.
var Outcomes = []string{JSONRPCError, ToolError, Transport, Timeout, BadResult}

func newOp(name, role string, timeout time.Duration) *result.AgentOp {
	return &result.AgentOp{Name: name, Role: role, Errors: map[string]int64{},
		Latency: hdrhistogram.New(1, max(timeout.Microseconds(), 1)*2+1_000_000, 3)}
}

// mergeOp adds o's calls to op's.
func mergeOp(op, o *result.AgentOp) {
	op.Calls += o.Calls
	if op.Redirect == "" {
		op.Redirect = o.Redirect
	}
	for k, v := range o.Errors {
		op.Errors[k] += v
	}
	op.Latency.Merge(o.Latency)
}

// item is one contended item of a project and the writes acknowledged to it.
type item struct {
	project, name string
	mu            sync.Mutex
	acks          []ack
	unanswered    []string // the words of writes that failed: landed or not, nobody knows
}

type ack struct {
	version  int64 // -1: the write's result has none (read-back)
	word     string
	sent, at time.Time // the call sent, its reply received
}

func (it *item) add(a ack) {
	it.mu.Lock()
	it.acks = append(it.acks, a)
	it.mu.Unlock()
}

func (it *item) failed(word string) {
	it.mu.Lock()
	it.unanswered = append(it.unanswered, word)
	it.mu.Unlock()
}

// Load is a prepared load: the tools found, every item written once.
type Load struct {
	spec     Spec
	o        Options
	projects []string
	items    []*item // project-major
	client   *http.Client
	runID    string
	words    atomic.Int64
	keeps    string // read-back: what a read showed after two writes (EveryWrite, LastWrite)
	lane     *result.MCPLane
}

// ErrTool is a spec that names what the server does not have.
type ErrTool struct{ msg string }

func (e *ErrTool) Error() string { return e.msg }

// Prepare connects once, checks that the server lists the spec's tools,
// and creates (the create tool, if any), writes and reads every contended
// item (unmeasured; see prepare): a version path the results lack, or a
// read that shows no written word, is an error here, before the load.
func Prepare(ctx context.Context, spec Spec, o Options) (*Load, error) {
	o.defaults()
	if err := spec.Check(); err != nil {
		return nil, err
	}
	l := &Load{spec: spec, o: o, runID: runID()}
	switch {
	case len(spec.Projects) == 0:
		for i := range o.Projects {
			l.projects = append(l.projects, fmt.Sprintf("p%d", i+1))
		}
	case len(spec.Projects) < o.Projects:
		return nil, fmt.Errorf("--projects %d: the file names %d projects", o.Projects, len(spec.Projects))
	default:
		l.projects = spec.Projects[:o.Projects]
	}
	tr := &http.Transport{MaxIdleConns: o.Agents + 8, MaxIdleConnsPerHost: o.Agents + 8, IdleConnTimeout: time.Minute,
		ResponseHeaderTimeout: o.Timeout, DisableCompression: false}
	// One kept-alive connection per agent: Go's default of two per host
	// makes 128 agents open and close connections until the ports run out
	// (the seed's pitfall).
	l.client = &http.Client{Transport: tr, CheckRedirect: redirect.Refuse("the MCP request")}
	cs, err := l.connect(ctx, 0)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	l.lane = laneOf(cs)
	listed, err := listTools(ctx, cs, toolsListTime)
	if err != nil {
		return nil, fmt.Errorf("MCP tools/list at %s: %v", o.Endpoint, err)
	}
	for _, r := range append([]string{Create}, Roles...) {
		if t := spec.Tool(r); t != nil && !slices.Contains(listed, t.Name) {
			slices.Sort(listed)
			return nil, &ErrTool{fmt.Sprintf("the server lists no tool %q (the %s tool); it has: %s",
				textline.Of(t.Name, maxShownName), r, textline.Names(listed, maxShownName))}
		}
	}
	for pi, p := range l.projects {
		// Agent pi is the project's first: its key writes the items.
		pcs := cs
		if pi > 0 && len(o.Keys) > 1 {
			if pcs, err = l.connect(ctx, pi); err != nil {
				return nil, err
			}
			defer pcs.Close()
		}
		for i := range o.Contended {
			it := &item{project: p, name: fmt.Sprintf("%02d", i+1)}
			l.items = append(l.items, it)
			if err := l.prepare(ctx, pcs, it); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// toolsListTime bounds the whole of a server's tools/list, every page (a
// variable for the tests).
var toolsListTime = 30 * time.Second

// The bounds of a server's tools/list: its pages, the bytes of all the
// names it lists, the tools kept, and how long a name is shown.
const (
	maxToolPages     = 1000
	maxToolNameBytes = 1 << 20
	maxTools         = 10000
	maxShownName     = 64
)

// listTools is the names of the tools the server lists, page after page:
// at most maxToolPages pages and maxToolNameBytes of names, within
// timeout for the whole listing, and never a cursor twice (its pages
// loop); the first maxTools names are kept.
func listTools(ctx context.Context, cs *mcp.ClientSession, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var names []string
	seen := map[[sha256.Size]byte]bool{}
	nameBytes := 0
	params := &mcp.ListToolsParams{}
	for page := 1; ; page++ {
		if page > maxToolPages {
			return nil, fmt.Errorf("over %d pages, each with a next cursor: the listing does not end", maxToolPages)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return nil, fmt.Errorf("the listing took over %v (%d pages)", timeout, page-1)
			}
			return nil, errors.New(textline.Of(redirected(err).Error(), textline.Max))
		}
		for _, tool := range res.Tools {
			if tool == nil {
				continue
			}
			if nameBytes += len(tool.Name); nameBytes > maxToolNameBytes {
				return nil, fmt.Errorf("tool names over %d KiB in all (page %d)", maxToolNameBytes>>10, page)
			}
			if len(names) < maxTools {
				names = append(names, tool.Name)
			}
		}
		if res.NextCursor == "" {
			return names, nil
		}
		h := sha256.Sum256([]byte(res.NextCursor))
		if seen[h] {
			return nil, fmt.Errorf("page %d names a cursor an earlier page named (%s): the pages loop",
				page, textline.Of(res.NextCursor, 40))
		}
		seen[h] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// Projects are the projects' names.
func (l *Load) Projects() []string { return l.projects }

// runID tells this run's words from another's on the same server.
func runID() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 6)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

// wordCount is the letters of a word's count: every word of a run is as
// long as every other, so that none is part of another (a search that
// matches a substring, a read-back that looks for it in a reply).
const wordCount = 7

// word is a new unique word: letters only, so that any analyzer keeps it
// one token ("zq" and the run's id, then a count in seven letters).
func (l *Load) word() string {
	n := l.words.Add(1)
	b := make([]byte, wordCount)
	for i := range b {
		b[i] = byte('a' + n%26)
		n /= 26
	}
	return l.prefix() + string(b)
}

// prefix is what every word of the run begins with.
func (l *Load) prefix() string { return "zq" + l.runID }

// keyed adds an agent's key and the standing header to every request, and
// bounds the replies it reads.
type keyed struct {
	base   http.RoundTripper
	header http.Header
	key    string
	limit  int64
}

func (k *keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for name, vs := range k.header {
		r.Header[name] = vs
	}
	if k.key != "" {
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	resp, err := k.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &bounded{ReadCloser: resp.Body, left: k.limit}
	return resp, nil
}

// bounded fails a reply body that grows past its limit.
type bounded struct {
	io.ReadCloser
	left int64
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errors.New("reply over the size limit")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// connect opens agent id's MCP session: initialize, then initialized.
func (l *Load) connect(ctx context.Context, id int) (*mcp.ClientSession, error) {
	key := ""
	if len(l.o.Keys) > 0 {
		key = l.o.Keys[id%len(l.o.Keys)]
	}
	// keyed sets the key on every request it sends, a redirect's too: a
	// 3xx is refused here, before the next hop (lib/redirect).
	hc := &http.Client{Transport: &keyed{base: l.client.Transport, header: l.o.Header, key: key, limit: l.o.MaxReply},
		Timeout: l.o.Timeout, CheckRedirect: redirect.Refuse("the MCP request")}
	client := mcp.NewClient(&mcp.Implementation{Name: "probe-agent", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: l.o.Endpoint, HTTPClient: hc, MaxRetries: -1,
		DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP initialize at %s: %v", l.o.Endpoint, textline.Of(redirected(err).Error(), textline.Max))
	}
	return cs, nil
}

// laneOf is the lane a session of the SDK's client spoke, as probe's own
// MCP loads name it: the stateless lane has no session and the 2026-07-28
// protocol or later; any other is the session lane (initialize).
func laneOf(cs *mcp.ClientSession) *result.MCPLane {
	lane := &result.MCPLane{Lane: "session"}
	if ir := cs.InitializeResult(); ir != nil {
		lane.ProtocolVersion = textline.Of(ir.ProtocolVersion, 40)
	}
	if cs.ID() == "" && lane.ProtocolVersion >= statelessVersion {
		lane.Lane = "stateless"
	}
	return lane
}

// statelessVersion is the first protocol of MCP's stateless lane.
const statelessVersion = "2026-07-28"

// call calls t for it with its holes filled.
func (l *Load) call(ctx context.Context, cs *mcp.ClientSession, t *Tool, it *item, word, term string) (*mcp.CallToolResult, error) {
	args, _ := fill(t.Args, holes(it.name, word, term, it.project)).(map[string]any)
	cctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: t.Name, Arguments: args})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return res, fmt.Errorf("%s: tool error: %s", t.Name, textline.Of(text(res), 200))
	}
	return res, nil
}

// outcome is a failed call's kind.
func outcome(err error) string {
	var rpc *jsonrpc.Error
	// A timeout first: the SDK may wrap the HTTP client's in a JSON-RPC
	// error of its own.
	msg := err.Error()
	switch {
	case redirect.As(err) != nil:
		return Transport // the SDK may call it a JSON-RPC error
	case errors.Is(err, context.DeadlineExceeded) || target.IsTimeout(err) ||
		strings.Contains(msg, "Client.Timeout exceeded") || strings.Contains(msg, "context deadline exceeded"):
		return Timeout
	case errors.As(err, &rpc):
		return JSONRPCError
	case strings.Contains(msg, ": tool error: "):
		return ToolError
	}
	return Transport
}

// text is a result's JSON: its structured content, else its texts.
func text(res *mcp.CallToolResult) string {
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// maxVersion bounds a version read from a reply: an integer JSON can
// carry exactly.
const maxVersion = 1 << 53

// version is the integer at t.Version in res.
func version(res *mcp.CallToolResult, t *Tool) (int64, error) {
	steps, err := probes.ParseJSONPath(t.Version)
	if err != nil {
		return 0, err
	}
	body := text(res)
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return 0, &ErrTool{fmt.Sprintf("%s's result is not JSON, so it holds no version %q: %s",
			t.Name, t.Version, textline.Of(body, 120))}
	}
	v, ok := probes.JSONAt(doc, steps)
	if !ok {
		return 0, &ErrTool{fmt.Sprintf("%s's result has no %q (give the path of the version in it); it holds %s",
			t.Name, t.Version, textline.Of(body, 160))}
	}
	n, isNum := v.(json.Number)
	i, err := n.Int64()
	if !isNum || err != nil || i < 0 || i > maxVersion {
		return 0, &ErrTool{fmt.Sprintf("%s's %q is %s, not a version (an integer from 0 to 2^53)",
			t.Name, t.Version, textline.Of(fmt.Sprint(v), 40))}
	}
	return i, nil
}

// redirected is the redirect probe refused in err, alone, when there is
// one (its line names the Location); else err.
func redirected(err error) error {
	if e := redirect.As(err); e != nil {
		return e
	}
	return err
}
