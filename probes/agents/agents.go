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

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/lib/textline"
	"github.com/probehq/probe/probes"
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

// Op is one table row: the connect of every agent, or one tool's calls.
type Op struct {
	Name    string // "connect" or the tool's name
	Role    string // "" for connect
	Calls   int64  // measured calls, failed ones included
	Errors  map[string]int64
	Latency *hdrhistogram.Histogram // microseconds, failed calls included
}

// Failed is how many of the calls failed.
func (op *Op) Failed() int64 {
	var n int64
	for _, v := range op.Errors {
		n += v
	}
	return n
}

func newOp(name, role string, timeout time.Duration) *Op {
	return &Op{Name: name, Role: role, Errors: map[string]int64{},
		Latency: hdrhistogram.New(1, max(timeout.Microseconds(), 1)*2+1_000_000, 3)}
}

func (op *Op) merge(o *Op) {
	op.Calls += o.Calls
	for k, v := range o.Errors {
		op.Errors[k] += v
	}
	op.Latency.Merge(o.Latency)
}

// Project is one project's rows.
type Project struct {
	Name string
	Ops  []*Op // connect, then the tools in role order
}

// Result is what the load measured and what the checks found.
type Result struct {
	Endpoint string
	Agents   int
	Keys     int // distinct keys the agents used
	Weights  Weights
	Start    time.Time     // the measured window's opening
	Duration time.Duration // the measured window
	Projects []*Project
	All      []*Op // the projects' rows merged
	Checks   Checks
	Ended    string // empty when the run completed; else why it ended early
}

// Checks are the findings after the run.
type Checks struct {
	Versions    int           // acknowledged writes checked (their versions)
	Items       int           // contended items
	FailedCalls int64         // measured calls that failed, every outcome
	Failures    []string      // each failed call kind, one line: "search: 3 timeout"
	Lost        []Lost        // items whose versions do not add up
	Stale       []Stale       // items whose last word the search does not find
	Fresh       time.Duration // the longest an item took to be found
	FreshWithin time.Duration
}

// Lost is an item whose acknowledged writes and versions do not add up.
type Lost struct {
	Project, Item string
	Base          int64   // its version before the run (probe's first write)
	Acked         int     // writes acknowledged after it
	Unanswered    int     // writes that failed: each may have landed or not
	Final         int64   // its version after the run; -1: it could not be read
	Twice         []int64 // versions acknowledged to two or more writes
	ReadErr       string  `json:",omitempty"`
}

// Missing is how many acknowledged writes the final version lacks.
func (l Lost) Missing() int64 {
	if l.Final < 0 {
		return 0
	}
	return max(0, l.Base+int64(l.Acked)-l.Final)
}

// Extra is how far the final version is above every write sent, the
// unanswered ones included: versions no write made.
func (l Lost) Extra() int64 {
	if l.Final < 0 {
		return 0
	}
	return max(0, l.Final-l.Base-int64(l.Acked+l.Unanswered))
}

func (l Lost) String() string {
	at := l.Project + "/" + l.Item
	var parts []string
	if len(l.Twice) > 0 {
		vs := make([]string, len(l.Twice))
		for i, v := range l.Twice {
			vs[i] = fmt.Sprint(v)
		}
		parts = append(parts, "version "+strings.Join(vs, ", ")+" acknowledged to two writes")
	}
	switch {
	case l.Final < 0:
		parts = append(parts, "its version could not be read ("+l.ReadErr+")")
	case l.Missing() > 0:
		parts = append(parts, fmt.Sprintf("%d writes acknowledged after version %d, final version %d (%d missing)", l.Acked, l.Base, l.Final, l.Missing()))
	case l.Extra() > 0:
		parts = append(parts, fmt.Sprintf("final version %d is above version %d and the %d writes sent after it (%d unanswered)", l.Final, l.Base, l.Acked+l.Unanswered, l.Unanswered))
	}
	return at + ": " + strings.Join(parts, "; ")
}

// Stale is an item the search did not find by its last acknowledged word.
type Stale struct {
	Project, Item, Word string
	Version             int64
	Err                 string `json:",omitempty"` // the last search's failure, if it failed
}

func (s Stale) String() string {
	msg := fmt.Sprintf("%s/%s: the word %q of version %d", s.Project, s.Item, s.Word, s.Version)
	if s.Err != "" {
		return msg + " could not be searched: " + s.Err
	}
	return msg + " does not find it"
}

// Failed says whether a check failed.
func (c Checks) Failed() bool { return c.FailedCalls > 0 || len(c.Lost) > 0 || len(c.Stale) > 0 }

// Lines are the failed checks, one line per kind (the exit error's).
func (c Checks) Lines() []string {
	var out []string
	if c.FailedCalls > 0 {
		out = append(out, fmt.Sprintf("%d calls failed (%s)", c.FailedCalls, strings.Join(c.Failures, "; ")))
	}
	if n := len(c.Lost); n > 0 {
		names := make([]string, n)
		for i, l := range c.Lost {
			names[i] = l.String()
		}
		out = append(out, fmt.Sprintf("lost writes on %d of %d items: %s", n, c.Items, strings.Join(names, "; ")))
	}
	if n := len(c.Stale); n > 0 {
		names := make([]string, n)
		for i, s := range c.Stale {
			names[i] = s.String()
		}
		out = append(out, fmt.Sprintf("search index stale on %d of %d items after %v: %s", n, c.Items, c.FreshWithin, strings.Join(names, "; ")))
	}
	return out
}

// item is one contended item of a project and the writes acknowledged to it.
type item struct {
	project, name string
	mu            sync.Mutex
	acks          []ack
	unanswered    []string // the words of writes that failed: landed or not, nobody knows
}

type ack struct {
	version int64
	word    string
	at      time.Time
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
}

// ErrTool is a spec that names what the server does not have.
type ErrTool struct{ msg string }

func (e *ErrTool) Error() string { return e.msg }

// Prepare connects once, checks that the server lists the spec's tools,
// and writes and reads every contended item once (unmeasured): a version
// path the results lack is an error here, before the load.
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
	listed, err := listTools(ctx, cs, toolsListTime)
	if err != nil {
		return nil, fmt.Errorf("MCP tools/list at %s: %v", o.Endpoint, err)
	}
	for _, r := range Roles {
		if t := spec.Tool(r); !slices.Contains(listed, t.Name) {
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
			word := l.word()
			res, err := l.call(ctx, pcs, spec.Tool(Write), it, word, "")
			if err != nil {
				return nil, fmt.Errorf("the first write of item %s/%s: %s", p, it.name, textline.Of(redirected(err).Error(), textline.Max))
			}
			v, err := version(res, spec.Tool(Write))
			if err != nil {
				return nil, err
			}
			it.acks = []ack{{version: v, word: word, at: time.Now()}}
			if spec.Tool(Read).Version != "" {
				res, err := l.call(ctx, pcs, spec.Tool(Read), it, "", "")
				if err != nil {
					return nil, fmt.Errorf("reading item %s/%s: %s", p, it.name, textline.Of(redirected(err).Error(), textline.Max))
				}
				if _, err := version(res, spec.Tool(Read)); err != nil {
					return nil, err
				}
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

// word is a new unique word: letters only, so that any analyzer keeps it
// one token ("zq" and the run's id, then a count in letters).
func (l *Load) word() string {
	n := l.words.Add(1)
	var b []byte
	for ; n > 0; n /= 26 {
		b = append(b, byte('a'+n%26))
	}
	return "zq" + l.runID + string(b)
}

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
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: l.o.Endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP initialize at %s: %v", l.o.Endpoint, textline.Of(redirected(err).Error(), textline.Max))
	}
	return cs, nil
}

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
	case errors.Is(err, context.DeadlineExceeded) || probes.IsTimeout(err) ||
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
