package agents

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probehq/probe/result"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memory is a small MCP memory server: the fixture's three tools over a
// map, with a fault when asked.
type memory struct {
	mu       sync.Mutex
	writes   int
	versions map[string]int64
	words    map[string]string          // word → permalink
	dropAt   int                        // the write acknowledged but not stored (0: none)
	failAt   int                        // the write stored but answered with an error (0: none)
	version  any                        // what write_note's version is, instead of the number (nil: the number)
	shape    *mcp.StreamableHTTPOptions // the SDK's shape (nil: stateless, JSON replies)
}

type args struct {
	Project  string `json:"project,omitempty"`
	Path     string `json:"path,omitempty"`
	Markdown string `json:"markdown,omitempty"`
	Query    string `json:"query,omitempty"`
}

func (m *memory) serve(t *testing.T, tools ...string) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "memory", Version: "1"}, nil)
	has := func(n string) bool { return len(tools) == 0 || strings.Contains(strings.Join(tools, " "), n) }
	if has("write_note") {
		mcp.AddTool(srv, &mcp.Tool{Name: "write_note"},
			func(ctx context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, map[string]any, error) {
				m.mu.Lock()
				defer m.mu.Unlock()
				m.writes++
				link := a.Project + "/" + strings.TrimSuffix(a.Path, ".md")
				v := m.versions[link] + 1
				if m.writes != m.dropAt {
					m.versions[link] = v
					for _, w := range strings.Fields(a.Markdown) {
						m.words[strings.Trim(w, ".:")] = "/" + strings.TrimSuffix(a.Path, ".md")
					}
				}
				if m.writes == m.failAt {
					return nil, nil, fmt.Errorf("the disk is slow today")
				}
				if m.version != nil {
					return nil, map[string]any{"version": m.version}, nil
				}
				return nil, map[string]any{"version": v}, nil
			})
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "search"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, map[string]any, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			hits := []any{}
			if p, ok := m.words[a.Query]; ok {
				hits = append(hits, map[string]any{"path": p})
			}
			return nil, map[string]any{"hits": hits}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_note"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, map[string]any, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			return nil, map[string]any{"version": m.versions[a.Project+a.Path]}, nil
		})
	shape := m.shape
	if shape == nil {
		shape = &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, shape)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func newMemory() *memory {
	return &memory{versions: map[string]int64{}, words: map[string]string{}}
}

func options(url string) Options {
	return Options{Endpoint: url, Agents: 6, Projects: 2, Contended: 4, Duration: 500 * time.Millisecond, Timeout: 5 * time.Second,
		FreshWithin: 300 * time.Millisecond}
}

func run(t *testing.T, m *memory, o Options) *result.Agents {
	t.Helper()
	l, err := Prepare(context.Background(), FixtureSpec(), o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCleanServerPasses(t *testing.T) {
	m := newMemory()
	res := run(t, m, options(m.serve(t)))
	c := res.Checks
	if c.Failed() || c.Items != 8 {
		t.Fatalf("checks %+v", c)
	}
	m.mu.Lock()
	stored := 0
	for _, v := range m.versions {
		stored += int(v)
	}
	m.mu.Unlock()
	if c.Versions != stored {
		t.Errorf("checked %d versions, the server stored %d", c.Versions, stored)
	}
	// The SDK's stateless server speaks the 2026-07-28 lane: no session.
	if res.MCP == nil || res.MCP.Lane != "stateless" || res.MCP.ProtocolVersion != "2026-07-28" {
		t.Errorf("lane %+v: want the stateless lane, protocol 2026-07-28", res.MCP)
	}
	if len(res.Projects) != 2 || res.Projects[1].Name != "p2" || len(res.All) != 4 || res.All[0].Name != "connect" || res.All[0].Calls != 6 {
		t.Errorf("rows: %+v", res.All)
	}
	var calls int64
	for _, p := range res.Projects {
		calls += p.Ops[1].Calls
	}
	if calls != res.All[1].Calls || calls == 0 {
		t.Errorf("the projects' writes (%d) are not all of them (%d)", calls, res.All[1].Calls)
	}
}

func TestDroppedWriteIsNamed(t *testing.T) {
	m := newMemory()
	m.dropAt = 12 // after the first write of each of the 8 items
	c := run(t, m, options(m.serve(t))).Checks
	if len(c.Lost) != 1 {
		t.Fatalf("lost %+v", c.Lost)
	}
	l := c.Lost[0]
	if l.Missing() != 1 || len(l.Twice) != 1 || !strings.Contains(l.String(), "(1 missing)") {
		t.Errorf("lost %+v: %s", l, l)
	}
	if !strings.Contains(strings.Join(c.Lines(), "\n"), "lost writes on 1 of 8 items (by version): "+l.Project+"/"+l.Item) {
		t.Errorf("lines %q", c.Lines())
	}
}

func TestToolTheServerLacks(t *testing.T) {
	m := newMemory()
	_, err := Prepare(context.Background(), FixtureSpec(), options(m.serve(t, "search", "read_note")))
	if _, ok := err.(*ErrTool); !ok || !strings.Contains(err.Error(), `lists no tool "write_note" (the write tool); it `+
		`has: read_note, search`) {
		t.Fatalf("err %v", err)
	}
}

// A version from a reply is taken only as a bounded integer.
func TestVersionIsChecked(t *testing.T) {
	for _, v := range []any{"7", -1, 1.5, float64(1 << 60), map[string]any{}} {
		m := newMemory()
		m.version = v
		_, err := Prepare(context.Background(), FixtureSpec(), options(m.serve(t)))
		if _, ok := err.(*ErrTool); !ok || !strings.Contains(err.Error(), "not a version") {
			t.Errorf("version %v: err %v", v, err)
		}
	}
	spec := FixtureSpec()
	spec.Tool(Write).Version = "note.version"
	m := newMemory()
	_, err := Prepare(context.Background(), spec, options(m.serve(t)))
	if err == nil || !strings.Contains(err.Error(), `write_note's result has no "note.version"`) {
		t.Errorf("err %v", err)
	}
}

func TestParseWeights(t *testing.T) {
	w, err := ParseWeights("write=30,search=47,read=23")
	if err != nil || w[Write] != 30 || w.String() != "write=30,search=47,read=23" {
		t.Fatalf("%v %v", w, err)
	}
	for _, bad := range []string{"", "write=0", "write=-1", "write=x", "recall=1", "write=1,write=2", "write=1e3"} {
		if _, err := ParseWeights(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestSpecCheck(t *testing.T) {
	if err := FixtureSpec().Check(); err != nil {
		t.Fatal(err)
	}
	s := FixtureSpec()
	s.Tool(Write).Args = map[string]any{"path": "{{item}}"}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "{{word}}") {
		t.Errorf("a write without its word: %v", err)
	}
	got := fill(map[string]any{"a": []any{"{{item}}-{{project}}", 3}}, holes("07", "w", "t", "p2"))
	if fmt.Sprint(got) != "map[a:[07-p2 3]]" {
		t.Errorf("fill: %v", got)
	}
}

// A write that failed may still have landed: its version is no lost
// write and no version without a write, and its word may be the item's
// last; only the failed call counts.
func TestUnansweredWriteThatLandedIsNotLost(t *testing.T) {
	m := newMemory()
	m.failAt = 12
	c := run(t, m, options(m.serve(t))).Checks
	if len(c.Lost) != 0 || len(c.Stale) != 0 || c.FailedCalls != 1 || !strings.Contains(c.Failures[0], "1 tool-error") {
		t.Fatalf("checks %+v", c)
	}
}

func TestOutcome(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("calling %q: %w", "tools/call", context.DeadlineExceeded):                                              Timeout,
		&jsonrpc.Error{Code: -32603, Message: `Post "http://x/mcp": context deadline exceeded (Client.Timeout exceeded)`}: Timeout,
		&jsonrpc.Error{Code: -32602, Message: "invalid params"}:                                                           JSONRPCError,
		fmt.Errorf("write_note: tool error: no"):                                                                          ToolError,
		fmt.Errorf("connection reset by peer"):                                                                            Transport,
	} {
		if got := outcome(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}

// Agents speak every shape the official SDK serves — sessions or
// stateless, JSON or event-stream replies — with no failed call, and say
// the lane each negotiated.
func TestAgentsOnEveryShapeOfTheSDK(t *testing.T) {
	for _, shape := range []struct {
		name string
		o    mcp.StreamableHTTPOptions
		lane string
	}{
		{"sessions, event streams (the default)", mcp.StreamableHTTPOptions{}, "session"},
		{"sessions, JSON", mcp.StreamableHTTPOptions{JSONResponse: true}, "session"},
		{"stateless, event streams", mcp.StreamableHTTPOptions{Stateless: true}, "stateless"},
		{"stateless, JSON", mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, "stateless"},
	} {
		t.Run(shape.name, func(t *testing.T) {
			m := newMemory()
			m.shape = &shape.o
			res := run(t, m, options(m.serve(t)))
			if res.Checks.Failed() {
				t.Errorf("checks %+v", res.Checks)
			}
			for _, op := range res.All {
				if op.Failed() != 0 || op.Calls == 0 {
					t.Errorf("%s: %d of %d calls failed: %v", op.Name, op.Failed(), op.Calls, op.Errors)
				}
			}
			if res.MCP == nil || res.MCP.Lane != shape.lane || res.MCP.ProtocolVersion == "" {
				t.Errorf("lane %+v: want the %s lane and its protocol", res.MCP, shape.lane)
			}
		})
	}
}
