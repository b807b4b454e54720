package agents

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probehq/probe/result"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scanStore is an MCP store without a search index: its search scans
// every item's stored text, as a knowledge graph's search_nodes does. It
// keeps every write (appends) or the last (replaces); its writes may be
// acknowledged and not stored.
type scanStore struct {
	mu        sync.Mutex
	appends   bool                // every write kept, else the last
	versions  bool                // results carry the item's version
	texts     map[string][]string // item link → its stored texts
	version   map[string]int64
	writes    int
	dropFrom  int            // from this write on (0: never) …
	dropEvery int            // … every dropEvery-th write is acknowledged and not stored
	frozen    string         // an item (project + link) no write after the first two reaches
	blind     string         // an item (project + link) the search never finds
	readsText bool           // the read's result holds the stored text
	seen      map[string]int // writes per item
}

func newScanStore(appends, versions bool) *scanStore {
	return &scanStore{appends: appends, versions: versions, readsText: true, texts: map[string][]string{},
		version: map[string]int64{}, seen: map[string]int{}}
}

func (s *scanStore) serve(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "scanstore", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_note"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, map[string]any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.writes++
			key := a.Project + "/" + strings.TrimSuffix(a.Path, ".md")
			s.seen[key]++
			v := s.version[key] + 1
			drop := s.dropFrom > 0 && s.writes >= s.dropFrom && (s.writes-s.dropFrom)%s.dropEvery == 0 ||
				key == s.frozen && s.seen[key] > 2
			if !drop {
				s.version[key] = v
				if s.appends {
					s.texts[key] = append(s.texts[key], a.Markdown)
				} else {
					s.texts[key] = []string{a.Markdown}
				}
			}
			out := map[string]any{"path": a.Path}
			if s.versions {
				out["version"] = v
			}
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "search"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, map[string]any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			hits := []any{}
			for key, texts := range s.texts {
				project, link, _ := strings.Cut(key, "/")
				if project != a.Project || key == s.blind {
					continue
				}
				for _, text := range texts {
					if strings.Contains(text, a.Query) {
						hits = append(hits, map[string]any{"path": "/" + link})
						break
					}
				}
			}
			return nil, map[string]any{"hits": hits}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_note"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, map[string]any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			key := a.Project + a.Path
			out := map[string]any{"path": a.Path}
			if s.readsText {
				out["texts"] = s.texts[key]
			}
			if s.versions {
				out["version"] = s.version[key]
			}
			return nil, out, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// unversioned is the fixture's spec without its version paths.
func unversioned() Spec {
	s := FixtureSpec()
	s.Tool(Write).Version, s.Tool(Read).Version = "", ""
	return s
}

func runSpec(t *testing.T, spec Spec, o Options) result.AgentChecks {
	t.Helper()
	l, err := Prepare(context.Background(), spec, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res.Checks
}

// A server whose writes are lost and whose search scans the store: the
// lost items are named, and none of them is called stale (their words
// belong to the lost writes); the others are searched, and found.
func TestLostWritesAreNotStale(t *testing.T) {
	s := newScanStore(false, true)
	s.frozen = "p2/agents/item-02" // its writes acknowledged, from the third on not stored
	o := options(s.serve(t))
	o.Duration = time.Second // writes to the one item, on a busy machine too
	c := runSpec(t, FixtureSpec(), o)
	if len(c.Lost) != 1 || c.Lost[0].Project != "p2" || c.Lost[0].Item != "02" || c.Mode != result.AgentByVersion {
		t.Fatalf("lost %+v", c.Lost)
	}
	if len(c.Stale) != 0 || c.Searched != c.Items-1 {
		t.Errorf("%d lost, %d searched of %d, stale %v", len(c.Lost), c.Searched, c.Items, c.Stale)
	}
	for _, l := range c.Lines() {
		if strings.Contains(l, "search") || strings.Contains(l, "index") {
			t.Errorf("a freshness line on lost writes: %s", l)
		}
	}
}

// Without a version, a store that keeps every write and loses some:
// read back, the acknowledged words it lacks are named; the rest is
// searched and found.
func TestReadBackFindsLostWrites(t *testing.T) {
	s := newScanStore(true, false)
	s.dropFrom, s.dropEvery = 20, 3
	c := runSpec(t, unversioned(), options(s.serve(t)))
	if c.Mode != result.AgentReadBack || c.Keeps != result.AgentEveryWrite || len(c.Lost) == 0 || len(c.Stale) != 0 || c.Searched != c.Items {
		t.Fatalf("checks %+v", c)
	}
	if l := c.Lost[0]; l.Unread == 0 || !strings.Contains(l.String(), "acknowledged writes not read back (zq") {
		t.Errorf("lost %+v: %s", l, l)
	}
	if !strings.Contains(strings.Join(c.Lines(), "\n"), "(read back, every write kept)") {
		t.Errorf("lines %q", c.Lines())
	}
}

// Without a version, a clean store passes, whether it keeps every write
// or the last; every item is searched.
func TestReadBackCleanPasses(t *testing.T) {
	for _, appends := range []bool{true, false} {
		s := newScanStore(appends, false)
		c := runSpec(t, unversioned(), options(s.serve(t)))
		want := result.AgentLastWrite
		if appends {
			want = result.AgentEveryWrite
		}
		if c.Failed() || c.Keeps != want || c.Searched != c.Items || c.ReadBack == 0 || c.Writes < 2*c.Items {
			t.Errorf("appends %v: checks %+v", appends, c)
		}
	}
}

// A store that keeps the last write and stops storing one item's writes:
// the item holds a word acknowledged before later writes were sent.
func TestReadBackLastWriteLost(t *testing.T) {
	s := newScanStore(false, false)
	s.frozen = "p1/agents/item-01"
	o := options(s.serve(t))
	o.Duration = time.Second // writes to the one item, on a busy machine too
	c := runSpec(t, unversioned(), o)
	if len(c.Lost) != 1 || c.Lost[0].Item != "01" || c.Lost[0].Superseded == 0 || len(c.Stale) != 0 {
		t.Fatalf("checks %+v", c)
	}
	if !strings.Contains(c.Lost[0].String(), "p1/01: it holds the word of a write acknowledged before") {
		t.Errorf("%s", c.Lost[0])
	}
}

// Read back, a search that never finds an item is still stale: the word
// searched was read back, so no lost write explains it.
func TestReadBackStale(t *testing.T) {
	s := newScanStore(true, false)
	s.blind = "p2/agents/item-03"
	c := runSpec(t, unversioned(), options(s.serve(t)))
	if len(c.Lost) != 0 || len(c.Stale) != 1 || c.Stale[0].Project != "p2" || c.Stale[0].Item != "03" {
		t.Fatalf("checks %+v", c)
	}
	if l := c.Lines(); len(l) != 1 || !strings.Contains(l[0], "(read back) was not found") ||
		!strings.HasPrefix(l[0], "search did not find the last word within 300ms on 1 of 8 items searched: p2/03") {
		t.Errorf("lines %q", l)
	}
}

// A read that shows no word cannot tell a lost write: bad input, before
// the load.
func TestReadBackNeedsWords(t *testing.T) {
	s := newScanStore(true, false)
	s.readsText = false
	_, err := Prepare(context.Background(), unversioned(), options(s.serve(t)))
	if _, ok := err.(*ErrTool); !ok || !strings.Contains(err.Error(), "holds neither written word") {
		t.Fatalf("err %v", err)
	}
}

// A long list of items is capped in its line; report.json has them all.
func TestLinesAreCapped(t *testing.T) {
	c := result.AgentChecks{Mode: result.AgentByVersion, Items: 20, Searched: 4, FreshWithin: 2e9}
	for i := range 16 {
		c.Lost = append(c.Lost, result.AgentLost{Project: "p1", Item: string(rune('a' + i)), Final: 1, Base: 1, Acked: 2})
	}
	c.Stale = []result.AgentStale{{Project: "p1", Item: "x", Word: "zq", Version: 3}}
	l := c.Lines()
	if len(l) != 2 || strings.Count(l[0], "p1/") != 3 || !strings.HasSuffix(l[0], "(2 missing) … and 13 more: report.json") {
		t.Errorf("lost line %q", l[0])
	}
	if !strings.Contains(l[1], "on 1 of 4 items searched (16 items left out: a lost write): p1/x") {
		t.Errorf("stale line %q", l[1])
	}
	twice := result.AgentLost{Project: "p1", Item: "01", Final: 9, Base: 1, Acked: 8, Twice: []int64{1, 2, 3, 4, 5, 6, 7, 8}}
	if !strings.HasPrefix(twice.String(), "p1/01: version 1, 2, 3, 4, 5 and 3 more acknowledged to two writes") {
		t.Errorf("%s", twice)
	}
}

// Words are as long as one another: a read-back takes no longer or
// shorter token for one.
func TestReadWords(t *testing.T) {
	l := &Load{runID: "abcdef"}
	a, b := l.word(), l.word()
	got := l.readWords(`["` + a + `", "` + b + `x", "zqabcdefab", "zqabcdef` + "\u00e9" + `"]`)
	if len(got) != 1 || !got[a] || len(a) != len("zqabcdef")+wordCount {
		t.Errorf("words %v of %q", got, a)
	}
}
