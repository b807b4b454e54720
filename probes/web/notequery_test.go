package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/probes"
)

// announcingSite serves a home page whose head links a note-query
// description (when link is true), the description at desc, and a query
// endpoint at /api/notes-query that counts what it is asked.
func announcingSite(link bool, desc string, description any) (*httptest.Server, *atomic.Int64) {
	var queries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			head := ""
			if link {
				head = `<link rel="service-desc" type="application/json" href="` + desc + `">`
			}
			w.Write([]byte("<!doctype html><html><head>" + head + "</head><body>notes</body></html>"))
		case r.URL.Path == desc && description != nil:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(description)
		case r.URL.Path == "/api/notes-query" && r.Method == "POST":
			queries.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"result": [1, 2]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	return srv, &queries
}

// A site that announces its endpoint in a dialect probe knows gets probe's
// queries for it, on the endpoint it named.
func TestNoteQueryFollowsTheAnnouncement(t *testing.T) {
	known := map[string][]Query{"https://example.test/dialect": {
		{Name: "one", Key: "one", Body: []byte(`{"q":1}`)}, {Name: "two", Key: "two", Body: []byte(`{"q":2}`)}}}
	for _, link := range []bool{true, false} {
		desc := "/.well-known/note-query.json"
		if link {
			desc = "/meta/query-api.json" // only the link names it
		}
		srv, queries := announcingSite(link, desc, map[string]string{"endpoint": "/api/notes-query", "profile": "https://example.test/dialect"})
		l := &NoteQuery{Known: known}
		run, err := probes.RunLoad(context.Background(), l, targetOf(t, srv),
			probes.LoadOptions{Concurrency: 2, Duration: 300 * time.Millisecond})
		srv.Close()
		if err != nil {
			t.Fatalf("link %v: %v", link, err)
		}
		calls, errs := run.Requests()
		if l.Path != "/api/notes-query" || calls == 0 || errs != 0 || queries.Load() < calls {
			t.Errorf("link %v: path %q, %d calls, %d errors, %d queries served", link, l.Path, calls, errs, queries.Load())
		}
		var rows []string
		for _, op := range run.Ops {
			rows = append(rows, op.Name)
		}
		if !slices.Contains(rows, "POST /api/notes-query two") {
			t.Errorf("link %v: rows %v, want the known queries'", link, rows)
		}
	}
}

// What a site announces is checked before it reaches a request line:
// another origin, dot segments, CR LF, a query are refused in one line;
// a site that announces nothing, or a dialect probe has no queries for,
// is told how to point notequery there.
func TestNoteQueryRefusesWhatItCannotFollow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		link     bool
		desc     string
		endpoint any
		want     string
	}{
		{"another host", false, "/.well-known/note-query.json", "http://evil.example/query", "is not on this server"},
		{"scheme-relative host", false, "/.well-known/note-query.json", "//evil.example/query", "is not on this server"},
		{"another scheme", false, "/.well-known/note-query.json", "file:///etc/passwd", "is not on this server"},
		{"dot segments", false, "/.well-known/note-query.json", "/api/../admin/reload", "has dot segments"},
		{"escaped dot segments", false, "/.well-known/note-query.json", "/api/%2e%2e/admin", "has dot segments"},
		{"CR LF", false, "/.well-known/note-query.json", "/query HTTP/1.1\r\nX-Injected: 1\r\n", "control characters"},
		{"a query", false, "/.well-known/note-query.json", "/query?admin=1", "not a path only"},
		{"link to another host", true, "http://evil.example/desc.json", nil, "service-desc link is refused"},
		{"nothing announced", false, "/nowhere", nil, "no query endpoint is known for this server"},
		{"no endpoint", false, "/.well-known/note-query.json", "", `no "endpoint"`},
		{"unknown dialect", false, "/.well-known/note-query.json", "/api/notes-query", "a dialect probe has no queries for"},
	} {
		var description any
		if tc.endpoint != nil {
			description = map[string]any{"endpoint": tc.endpoint, "profile": "urn:other\r\n"}
		}
		srv, queries := announcingSite(tc.link, tc.desc, description)
		_, err := probes.RunLoad(context.Background(), &NoteQuery{}, targetOf(t, srv),
			probes.LoadOptions{Concurrency: 1, Duration: 100 * time.Millisecond})
		srv.Close()
		if err == nil || !probes.IsNotFound(err) || !strings.Contains(err.Error(), tc.want) || strings.ContainsAny(err.Error(), "\r\n") {
			t.Errorf("%s: %v, want one line with %q", tc.name, err, tc.want)
		}
		if queries.Load() != 0 {
			t.Errorf("%s: %d queries sent", tc.name, queries.Load())
		}
	}
	// Bodies of one's own go to whatever endpoint is announced.
	srv, queries := announcingSite(false, "/.well-known/note-query.json",
		map[string]string{"endpoint": "/api/notes-query", "profile": "urn:other"})
	defer srv.Close()
	l := &NoteQuery{Queries: []Query{{Name: "#1", Key: "{}", Body: []byte("{}")}}}
	if _, err := probes.RunLoad(context.Background(), l, targetOf(t, srv),
		probes.LoadOptions{Concurrency: 1, Duration: 100 * time.Millisecond}); err != nil || queries.Load() == 0 {
		t.Errorf("bodies of one's own: %v, %d queries", err, queries.Load())
	}
}

func TestSameOriginPath(t *testing.T) {
	tg := &probes.Target{URL: mustURL(t, "http://127.0.0.1:8080/base/")}
	for ref, want := range map[string]string{
		"/query":                        "/query",
		"http://127.0.0.1:8080/q/x":     "/q/x",
		"query":                         "/query", // relative to the page at /
		"/base/query":                   "/query", // the target's base path is every request's
		"/a%20b":                        "/a%20b",
		"HTTP://127.0.0.1:8080/query":   "/query",
		"http://127.0.0.1:9090/query":   "",
		"http://user@127.0.0.1:8080/q":  "",
		"/q\\..\\admin":                 "",
		"/" + strings.Repeat("a", 2000): "",
	} {
		got, err := sameOriginPath(tg, "/", ref)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("%q: %q %v, want %q", ref, got, err, want)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
