package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/probehq/probe/fixtures/site"
)

func TestMain(m *testing.M) {
	site.RunQueryWorkerIfChild()
	// probe starts the fixture by running its own binary with "fixture
	// serve": here the test binary stands in for it.
	if len(os.Args) > 1 && os.Args[1] == "argv-server" {
		serveArgv() // a server that logs its arguments: start_test
		return
	}
	if len(os.Args) > 1 && (os.Args[1] == "fixture" || os.Args[1] == jsonnetCommand) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func runProbe(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// oneLine: a bad command line gets one clear line, never a stack trace.
func oneLine(t *testing.T, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "probe: ") || !strings.Contains(last, want) || strings.Contains(stderr, "goroutine ") {
		t.Errorf("stderr %q: want one line 'probe: …%s…'", stderr, want)
	}
}

// badInput runs a command line that must fail with code and one line
// holding want, and nothing on stdout.
func badInput(t *testing.T, args []string, code int, want string) {
	t.Helper()
	got, stdout, stderr := runProbe(t, context.Background(), append(args, "--out", t.TempDir())...)
	if got != code {
		t.Errorf("%v: exit %d, want %d (stderr %q)", args, got, code, stderr)
	}
	oneLine(t, stderr, want)
	if stdout != "" {
		t.Errorf("%v: stdout %q", args, stdout)
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "no command"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"fixture"}, exitUsage, "usage: probe fixture serve"},
		{[]string{"fixture", "serve", "--mode", "lazy"}, exitUsage, `unknown mode "lazy"`},
		{[]string{"fixture", "serve", "--notes", "-3"}, exitUsage, "--notes must be positive"},
		{[]string{"fixture", "serve", "--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"fixture", "serve", "--addr", "127.0.0.1:0", "--vault", "/no/such/vault"}, exitError, "/no/such/vault"},
	} {
		code, _, stderr := runProbe(t, context.Background(), tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		oneLine(t, stderr, tc.want)
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := runProbe(t, context.Background(), "fixture", "serve", "--addr", ln.Addr().String(), "--notes", "5")
	if code != exitError {
		t.Errorf("exit %d", code)
	}
	oneLine(t, stderr, "address already in use")
}

// syncBuffer lets the test read what the serving goroutine writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestFixtureServePrintsURLAndServes(t *testing.T) {
	for _, mode := range []string{"per-request", "load-time"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var out, errb syncBuffer
			done := make(chan int)
			go func() {
				done <- run(ctx, []string{"fixture", "serve", "--addr", "127.0.0.1:0", "--notes", "30", "--mode", mode}, &out, &errb)
			}()
			var url string
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if s := out.String(); strings.HasPrefix(s, "listening on http://") && strings.HasSuffix(s, "\n") {
					url = strings.TrimSpace(strings.TrimPrefix(s, "listening on "))
					break
				}
			}
			if url == "" {
				cancel()
				t.Fatalf("no URL printed; stderr:\n%s", errb.String())
			}
			resp, err := http.Get(url + "/sitemap.xml")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(body, []byte("<urlset")) {
				t.Errorf("sitemap: %d %.200s", resp.StatusCode, body)
			}
			if !strings.Contains(errb.String(), mode+" mode") {
				t.Errorf("stderr does not name the mode:\n%s", errb.String())
			}
			cancel()
			if code := <-done; code != exitOK {
				t.Errorf("exit %d after cancel; stderr:\n%s", code, errb.String())
			}
		})
	}
}
