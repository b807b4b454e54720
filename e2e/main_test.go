package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/probehq/probe/fixtures/site"
	"github.com/probehq/probe/internal/cli"
)

// The exit codes of cli.Run (internal/cli/main.go).
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func TestMain(m *testing.M) {
	site.RunQueryWorkerIfChild()
	if len(os.Args) > 2 && os.Args[1] == "static-server" {
		serveStatic(os.Args[2]) // a server that never sees a change: scale_test
		return
	}
	if len(os.Args) > 3 && os.Args[1] == "burn-server" {
		serveBurn(os.Args[2], os.Args[3]) // a server busy after its clients left: settle_test
		return
	}
	if len(os.Args) > 4 && os.Args[1] == "capacity-server" {
		serveCapacity(os.Args[2], os.Args[3], os.Args[4]) // a server of known capacity: ramp_test
		return
	}
	// probe re-runs its own binary with a command line ("fixture serve",
	// the Jsonnet child): here the test binary stands in for it. A test
	// binary's own arguments are all -test.* flags.
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		os.Exit(cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr))
	}
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: end-to-end tests skipped under -short (run go test ./e2e)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runProbe(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(ctx, args, &out, &errb)
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

// freeLoopbackAddr finds a port nobody listens on.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// buildVictim builds the fuzz tests' victim server (as internal/cli's
// fuzz_test does).
func buildVictim(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "victim")
	if out, err := exec.Command("go", "build", "-o", bin, "../probes/fuzz/testdata/victim").CombinedOutput(); err != nil {
		t.Fatalf("building the victim server: %v\n%s", err, out)
	}
	return bin
}
