package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/probehq/probe/fixtures/site"
	"github.com/probehq/probe/internal/cli/clitest"
	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/internal/lockedbuf"
)

func TestMain(m *testing.M) {
	site.RunQueryWorkerIfChild()
	// probe starts the fixture by running its own binary with "fixture
	// serve": here the test binary stands in for it.
	if len(os.Args) > 1 && os.Args[1] == "argv-server" {
		serveArgv() // a server that logs its arguments: start_test
		return
	}
	if len(os.Args) > 1 && (os.Args[1] == "fixture" || os.Args[1] == shared.JsonnetCommand) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// probeCmd is probe's command line, called in the test's process.
var probeCmd = clitest.Probe(run)

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
		code, _, stderr := probeCmd.Run(t, context.Background(), tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		clitest.OneLine(t, stderr, tc.want)
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := probeCmd.Run(t, context.Background(), "fixture", "serve", "--addr", ln.Addr().String(), "--notes", "5")
	if code != exitError {
		t.Errorf("exit %d", code)
	}
	clitest.OneLine(t, stderr, "address already in use")
}

func TestFixtureServePrintsURLAndServes(t *testing.T) {
	for _, mode := range []string{"per-request", "load-time"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var out, errb lockedbuf.Buffer
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
			resp, body := clitest.Get(t, http.DefaultClient, url+"/sitemap.xml")
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
