package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/testservers/pushhub"
	"github.com/probehq/probe/report/wsreport"
)

// stingyHub lets the first `open` upgrades in and refuses every other
// with 503; it delivers every event published to its room's connections
// once, so that what it let in passes every check.
type stingyHub struct {
	open     int64
	upgrades atomic.Int64
	mu       sync.Mutex
	rooms    map[string][]chan []byte
}

func (h *stingyHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/ws":
		if h.upgrades.Add(1) > h.open {
			http.Error(w, "server full", http.StatusServiceUnavailable)
			return
		}
		room, ch := r.URL.Query().Get("room"), make(chan []byte, 256)
		h.mu.Lock()
		h.rooms[room] = append(h.rooms[room], ch)
		h.mu.Unlock()
		pushhub.Deliver(w, r, ch, pushhub.Text)
	case "/publish":
		ev, ok := pushhub.ReadPublished(w, r)
		if !ok {
			return
		}
		msg, _ := json.Marshal(ev)
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, ch := range h.rooms[ev.Room] {
			ch <- msg
		}
	default:
		http.NotFound(w, r)
	}
}

// TestWSRefusedUpgradesFail: a target that refuses 49 of 50 upgrades and
// delivers every event to the one it let in fails the run (exit 1), the
// refusals named in the verdict and the one line, not "every event once".
func TestWSRefusedUpgradesFail(t *testing.T) {
	h := &stingyHub{open: 1, rooms: map[string][]chan []byte{}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	out := t.TempDir()
	code, _, stderr := probeCmd.Run(t, context.Background(), "ws", "--target", srv.URL, "--token", "t0k", "--connections", "50",
		"--rooms", "1", "--events", "5", "--rounds", "1", "--pause", "10ms", "--publish-path", "/publish",
		"--source-addrs", "1", "--out", out)
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("exit %d, no report: %v\n%s", code, err, stderr)
	}
	var d wsreport.WS
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	want := `49 of 50 upgrades refused or never ready (first: the target refused the WebSocket upgrade: HTTP 503 "server full")`
	if code != exitError || d.Ready.Refused != 49 || d.Ready.Ready != 1 || !strings.Contains(d.Verdict, want) {
		t.Fatalf("exit %d (want %d), refused %d, ready %d, verdict %q\n%s",
			code, exitError, d.Ready.Refused, d.Ready.Ready, d.Verdict, stderr)
	}
	// What was let in was delivered: the refusals alone fail the run.
	if d.Totals.Expected != 5 || d.Totals.Delivered != 5 {
		t.Errorf("totals %+v", d.Totals)
	}
	clitest.OneLine(t, stderr, want)
}
