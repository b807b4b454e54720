package e2e

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/clitest"
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
		code, stdout, stderr := probeCmd.Run(t, context.Background(), "notequery", "--target", srv.URL, "--duration", "1s", "--out", t.TempDir())
		if code != exitError || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q", tc.announce, code, stdout)
		}
		clitest.OneLine(t, stderr, tc.want)
		if !strings.Contains(stderr, "point it there with --path /query --body") {
			t.Errorf("%q: %q names no flag", tc.announce, stderr)
		}
	}
}
