// Command agentsbroken is an MCP memory server with one seeded fault, for
// probe agents' end-to-end test: the fixture's write_note, search and
// read_note tools over an in-memory store, and with -trap
//
//	drop   one acknowledged write is not stored (its version is given again)
//	dupe   two writes get the same version (both stored)
//	stale  one item's writes stop reaching the search index
//	lose   from write loseFrom on every second write is acknowledged and
//	       not stored, and the search has no index: it scans the notes
//	refuse every request is refused, initialize included
//
// It prints "listening on URL" once it serves.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// trapAt is the write (counted from the first) the trap springs on: after
// probe's first write of every item.
const trapAt = 30

// loseFrom is the first write lose drops: after probe's writes before the
// load (two an item, read back).
const loseFrom = 100

type note struct {
	version int64
	text    string
}

type store struct {
	trap   string
	mu     sync.Mutex
	writes int
	notes  map[string]*note           // project + permalink
	index  map[string]map[string]bool // project + word → permalinks
	frozen string                     // stale: the item whose writes are no longer indexed
}

func (s *store) write(project, path, text string) (map[string]any, error) {
	if !strings.HasSuffix(path, ".md") || strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q: want a vault path like notes/x.md", path)
	}
	link := "/" + strings.TrimSuffix(path, ".md")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	n := s.notes[project+link]
	if n == nil {
		n = &note{}
		s.notes[project+link] = n
	}
	springs := s.writes == trapAt
	switch {
	case s.trap == "lose" && s.writes >= loseFrom && (s.writes-loseFrom)%2 == 0:
		return map[string]any{"path": path, "version": n.version + 1}, nil // acknowledged, never stored
	case springs && s.trap == "drop":
		return map[string]any{"path": path, "version": n.version + 1}, nil // acknowledged, never stored
	case springs && s.trap == "dupe":
		n.version++
		n.text = text
		s.reindex(project, link, text)
		return map[string]any{"path": path, "version": n.version - 1}, nil // the version of the write before
	case springs && s.trap == "stale":
		s.frozen = project + link
	}
	n.version++
	n.text = text
	if s.frozen != project+link {
		s.reindex(project, link, text)
	}
	return map[string]any{"path": path, "version": n.version}, nil
}

// reindex points the words of text at link, and no other word.
func (s *store) reindex(project, link, text string) {
	for key, links := range s.index {
		if strings.HasPrefix(key, project+"\x00") {
			delete(links, link)
		}
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
		key := project + "\x00" + w
		if s.index[key] == nil {
			s.index[key] = map[string]bool{}
		}
		s.index[key][link] = true
	}
}

func (s *store) search(project, query string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	hits := []map[string]any{}
	if s.trap == "lose" { // no index: every note's text is scanned
		for key, n := range s.notes {
			link, ok := strings.CutPrefix(key, project)
			if ok && strings.HasPrefix(link, "/") && strings.Contains(strings.ToLower(n.text), strings.ToLower(query)) && len(hits) < 10 {
				hits = append(hits, map[string]any{"path": link})
			}
		}
		return map[string]any{"query": query, "hits": hits}
	}
	seen := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(query)) {
		for link := range s.index[project+"\x00"+w] {
			if !seen[link] && len(hits) < 10 {
				seen[link] = true
				hits = append(hits, map[string]any{"path": link})
			}
		}
	}
	return map[string]any{"query": query, "hits": hits}
}

func (s *store) read(project, link string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.notes[project+link]
	if n == nil {
		return nil, fmt.Errorf("no note at %s", link)
	}
	return map[string]any{"path": link, "version": n.version, "markdown": n.text}, nil
}

type writeArgs struct {
	Project  string `json:"project,omitempty"`
	Path     string `json:"path"`
	Markdown string `json:"markdown"`
}

type searchArgs struct {
	Project string `json:"project,omitempty"`
	Query   string `json:"query"`
}

type readArgs struct {
	Project string `json:"project,omitempty"`
	Path    string `json:"path"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	trap := flag.String("trap", "", "drop, dupe, stale, lose or refuse (empty: none)")
	flag.Parse()
	s := &store{trap: *trap, notes: map[string]*note{}, index: map[string]map[string]bool{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentsbroken", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_note", Description: "store a note"},
		func(ctx context.Context, req *mcp.CallToolRequest, a writeArgs) (*mcp.CallToolResult, map[string]any, error) {
			out, err := s.write(a.Project, a.Path, a.Markdown)
			return nil, out, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Description: "find notes by word"},
		func(ctx context.Context, req *mcp.CallToolRequest, a searchArgs) (*mcp.CallToolResult, map[string]any, error) {
			return nil, s.search(a.Project, a.Query), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_note", Description: "read a note and its version"},
		func(ctx context.Context, req *mcp.CallToolRequest, a readArgs) (*mcp.CallToolResult, map[string]any, error) {
			out, err := s.read(a.Project, a.Path)
			return nil, out, err
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	if *trap == "refuse" {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no sessions today", http.StatusForbidden)
		})
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	fmt.Printf("listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}
