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

	"github.com/probehq/probe/report"
)

func TestDuringWritesBadInput(t *testing.T) {
	probeCmd.BadInput(t, []string{"page", "--during-writes", "2/s"}, exitUsage, "--during-writes needs --rate")
	probeCmd.BadInput(t, []string{"page", "--during-writes", "fast", "--rate", "10"}, exitUsage, "want a rate of writes")
	probeCmd.BadInput(t, []string{"page", "--during-writes", "1/s", "--rate", "10", "--write-permalink", "/x"}, exitUsage, "want {path} in it")
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
	code, stdout, stderr := probeCmd.Run(t, context.Background(), "page", "--target", srv.URL, "--rate", "20", "--during-writes", "2/s",
		"--freshness-timeout", "1s", "--duration", "3s", "--warmup", "0", "--json", "--out", out, "--fail-on", "lost_writes>0")
	if code != exitError || !strings.Contains(stderr, "lost_writes") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	var rep report.Run
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Writes == nil {
		t.Fatalf("%v %.300s", err, stdout)
	}
	if rep.Writes.Lost != 1 || len(rep.Writes.Changes) < 3 {
		t.Errorf("lost %d of %d changes, want 1 of at least 3", rep.Writes.Lost, len(rep.Writes.Changes))
	}
}
