package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/report"
)

// startFixtureServe runs `probe fixture serve` as a child, as a user
// would by hand: its URL, from the line it prints when it listens.
func startFixtureServe(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"fixture", "serve", "--addr", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				lines <- strings.TrimSpace(url)
			}
		}
	}()
	select {
	case url := <-lines:
		return url
	case <-time.After(2 * time.Minute):
		t.Fatal("fixture serve did not listen within 2 minutes")
		return ""
	}
}

// The fixture started by hand, given by URL: notequery finds its endpoint
// by what the site announces and asks its own note queries, cleanly.
func TestNoteQueryByURLOnTheFixture(t *testing.T) {
	for _, mode := range []string{"per-request", "load-time"} {
		url := startFixtureServe(t, "--mode", mode, "--notes", "300")
		out := t.TempDir()
		code, _, stderr := runProbe(t, context.Background(), "notequery", "--target", url, "--duration", "1s",
			"--warmup", "200ms", "--concurrency", "4", "--out", out)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", mode, code, stderr)
		}
		b, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rep report.RunReport
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		rows := map[string]bool{}
		for _, op := range rep.Operations {
			rows[op.Op] = true
		}
		if rep.Latency.Requests == 0 || rep.Latency.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors %v", mode, rep.Latency.Requests, rep.Latency.Errors, rep.Errors)
		}
		for _, q := range []string{"filter-by-tag", "sort-by-date", "count-words", "group-by-month"} {
			if !rows["POST /query "+q] {
				t.Errorf("%s: rows %v lack the fixture's %s", mode, rows, q)
			}
		}
	}
}

// A site that announces its endpoint on another host is refused in one
// line, and nothing is sent there; one that announces nothing is told
// how to point notequery at its endpoint.
func TestNoteQueryByURLRefusals(t *testing.T) {
	var announce atomic.Pointer[string]
	announce.Store(new(string))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/note-query.json" && *announce.Load() != "" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(*announce.Load()))
			return
		}
		if r.URL.Path == "/" {
			w.Write([]byte("<!doctype html><title>a site</title><p>hello</p>"))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	for _, tc := range []struct{ announce, want string }{
		{`{"endpoint": "http://169.254.169.254/latest/meta-data/"}`, "is not on this server"},
		{`{"endpoint": "/query\r\nHost: elsewhere"}`, "control characters"},
		{`{"endpoint": "/a/../../admin/reload"}`, "has dot segments"},
		{"", "no query endpoint is known for this server"},
	} {
		announce.Store(&tc.announce)
		code, stdout, stderr := runProbe(t, context.Background(), "notequery", "--target", srv.URL, "--duration", "1s", "--out", t.TempDir())
		if code != exitError || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q", tc.announce, code, stdout)
		}
		oneLine(t, stderr, tc.want)
		if !strings.Contains(stderr, "point it there with --path /query --body") {
			t.Errorf("%q: %q names no flag", tc.announce, stderr)
		}
	}
}
