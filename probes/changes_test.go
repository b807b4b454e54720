package probes

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probehq/probe/result"
)

// notesServer keeps notes written with PUT /admin/notes/… and shows them on
// their page, in its sitemap and in its search, after delay; with dropEvery
// > 0, every dropEvery-th write is acknowledged and never shown.
func notesServer(delay time.Duration, dropEvery int) *httptest.Server {
	return httptest.NewServer(notesHandler(delay, dropEvery))
}

func notesHandler(delay time.Duration, dropEvery int) http.Handler {
	var mu sync.Mutex
	notes := map[string]string{} // permalink → body
	writes := 0
	token := regexp.MustCompile(`prb[a-z]+`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == "PUT" && strings.HasPrefix(r.URL.Path, "/admin/notes/"):
			body, _ := io.ReadAll(r.Body)
			writes++
			if dropEvery > 0 && writes%dropEvery == 0 {
				return // acknowledged, lost
			}
			perm := "/" + strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/admin/notes/"), ".md")
			time.AfterFunc(delay, func() {
				mu.Lock()
				notes[perm] = string(body)
				mu.Unlock()
			})
		case r.Method == "DELETE":
		case r.URL.Path == "/sitemap.xml":
			fmt.Fprint(w, "<urlset>")
			for p := range notes {
				fmt.Fprintf(w, "<url><loc>http://x%s</loc></url>", p)
			}
			fmt.Fprint(w, "</urlset>")
		case r.URL.Path == "/search":
			q := r.URL.Query().Get("q")
			for p, b := range notes {
				if strings.Contains(b, q) && token.MatchString(q) {
					fmt.Fprintf(w, `{"path": %q}`, p)
				}
			}
		default:
			if b, ok := notes[r.URL.Path]; ok {
				fmt.Fprint(w, b)
				return
			}
			http.NotFound(w, r)
		}
	})
}

// noteChanger writes note n to srv's /admin/notes/ and watches for it as
// watch says, on one writing client closed when the test ends.
func noteChanger(t *testing.T, srv *httptest.Server, watch Watch) func(n int) result.Change {
	tg := targetOf(t, srv)
	writer := NewClient(tg, 5*time.Second)
	t.Cleanup(writer.Close)
	return func(n int) result.Change {
		return ChangeNote(context.Background(), writer, tg, 5*time.Second, HTTPWriter{Path: "/admin/notes/"}, watch, n)
	}
}

func TestChangesAreWatchedUntilTheyShow(t *testing.T) {
	srv := notesServer(80*time.Millisecond, 0)
	defer srv.Close()
	ch := noteChanger(t, srv, Watch{Sitemap: "/sitemap.xml", SearchPath: "/search", Timeout: 5 * time.Second})(1)
	if ch.Err != "" || len(ch.Lost) != 0 || !strings.HasPrefix(ch.Permalink, "/probe/change-1-prb") {
		t.Fatalf("%+v", ch)
	}
	for _, place := range []string{result.PlacePage, result.PlaceSitemap, result.PlaceSearch} {
		if v := ch.Visible[place]; v < 80*time.Millisecond || v > 3*time.Second {
			t.Errorf("%s visible after %v, want the server's 80 ms and a little", place, v)
		}
	}
}

// A server that acknowledges a write and never shows it has lost it.
func TestALostWriteIsCaught(t *testing.T) {
	srv := notesServer(0, 2)
	defer srv.Close()
	change := noteChanger(t, srv, Watch{Sitemap: "/sitemap.xml", Timeout: 500 * time.Millisecond})
	first, second := change(1), change(2)
	if len(first.Lost) != 0 || strings.Join(second.Lost, ",") == "" || second.Err != "" {
		t.Errorf("first %+v, second %+v: want the second lost", first, second)
	}
}

// Each place is watched on its own: a sitemap that takes 400 ms to answer
// does not make the page, which shows the note at once, seem late.
func TestASlowPlaceDelaysNoOther(t *testing.T) {
	notes := notesHandler(0, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sitemap.xml" {
			time.Sleep(400 * time.Millisecond)
		}
		notes.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ch := noteChanger(t, srv, Watch{Sitemap: "/sitemap.xml", Timeout: 5 * time.Second})(1)
	if ch.Err != "" || len(ch.Lost) != 0 {
		t.Fatalf("%+v", ch)
	}
	page, sitemap := ch.Visible[result.PlacePage], ch.Visible[result.PlaceSitemap]
	if page >= 300*time.Millisecond || sitemap < 400*time.Millisecond {
		t.Errorf("page seen after %v, sitemap after %v: want the page well before the sitemap's 400 ms", page, sitemap)
	}
}
