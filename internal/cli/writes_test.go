package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Reads during writes on the fixture: per-request mode's full re-render
// stalls the readers, load-time mode's incremental sync does not; no write
// is lost in either.
func TestReadsDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the fixture twice and writes while it reads")
	}
	for _, mode := range []string{"per-request", "load-time"} {
		code, stdout, stderr := runProbe(t, context.Background(), "page", "--fixture-mode", mode, "--notes", "400",
			"--rate", "40", "--during-writes", "1/s", "--duration", "6s", "--warmup", "1s", "--concurrency", "16", "--json", "--out", t.TempDir())
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", mode, code, stderr)
		}
		var rep struct {
			Writes *struct {
				Changes []struct {
					VisibleMS map[string]float64 `json:"visible_ms"`
				}
				Lost   int
				Stall  bool
				During struct{ Requests int64 } `json:"reads_during_sync"`
			}
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Writes == nil {
			t.Fatalf("%s: %v %.300s", mode, err, stdout)
		}
		w := rep.Writes
		if len(w.Changes) == 0 || w.Lost != 0 {
			t.Errorf("%s: %d changes, %d lost", mode, len(w.Changes), w.Lost)
		}
		for _, c := range w.Changes {
			if c.VisibleMS["page"] == 0 || c.VisibleMS["sitemap"] == 0 || c.VisibleMS["search"] == 0 {
				t.Errorf("%s: a change not seen everywhere: %v", mode, c.VisibleMS)
			}
		}
		if w.Stall != (mode == "per-request") {
			t.Errorf("%s: stall %v (%d reads during syncs)", mode, w.Stall, w.During.Requests)
		}
	}
}

func TestDuringWritesBadInput(t *testing.T) {
	badInput(t, []string{"page", "--during-writes", "2/s"}, exitUsage, "--during-writes needs --rate")
	badInput(t, []string{"page", "--during-writes", "fast", "--rate", "10"}, exitUsage, "want a rate of writes")
	badInput(t, []string{"page", "--during-writes", "1/s", "--rate", "10", "--write-permalink", "/x"}, exitUsage, "want {path} in it")
}

// A server that answers a write and never shows it: the reads go on, the
// report counts the lost write, and the run exits 1 saying so.
func TestReadsDuringWritesLostWrite(t *testing.T) {
	var mu sync.Mutex
	pages := map[string]string{"/a": "<html><body>a</body></html>", "/b": "<html><body>b</body></html>"}
	dropped := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/admin/notes/"):
			body, _ := io.ReadAll(r.Body)
			if dropped == 0 { // the first write is lost; the others show
				dropped++
				return
			}
			pages["/"+strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/admin/notes/"), ".md")] = "<html><body>" + string(body) + "</body></html>"
		case r.Method == http.MethodDelete:
		case r.URL.Path == "/sitemap.xml":
			fmt.Fprint(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for p := range pages {
				fmt.Fprintf(w, "<url><loc>http://%s%s</loc></url>", r.Host, p)
			}
			fmt.Fprint(w, "</urlset>")
		case pages[r.URL.Path] != "":
			fmt.Fprint(w, pages[r.URL.Path])
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out := t.TempDir()
	code, stdout, stderr := runProbe(t, context.Background(), "page", "--target", srv.URL, "--rate", "20", "--during-writes", "2/s",
		"--freshness-timeout", "1s", "--duration", "3s", "--warmup", "0", "--json", "--out", out, "--fail-on", "lost_writes>0")
	if code != exitError || !strings.Contains(stderr, "lost_writes") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Writes struct {
			Lost    int
			Changes []struct{ Lost []string }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v %.300s", err, stdout)
	}
	if rep.Writes.Lost != 1 || len(rep.Writes.Changes) < 3 {
		t.Errorf("lost %d of %d changes, want 1 of at least 3", rep.Writes.Lost, len(rep.Writes.Changes))
	}
}
