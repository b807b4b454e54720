package e2e

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
	"github.com/probehq/probe/target"
)

// freeAddr is a loopback address nobody listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := shared.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// startProcess starts the program name with args, a server of the test's,
// killed and reaped when the test ends.
func startProcess(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// startChild starts a server as probe starts a target (its URL known once
// it listens), stopped when the test ends; a caller may stop it sooner.
func startChild(t testing.TB, spec target.ChildSpec) *target.Child {
	t.Helper()
	child, err := target.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("starting %s: %v", filepath.Base(spec.Argv[0]), err)
	}
	t.Cleanup(func() { child.Stop() })
	return child
}

// waitAnswers waits, 10 s at most, until a GET of u is answered.
func waitAnswers(t *testing.T, u string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered: %v", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// getBody is the status and body of a GET of u.
func getBody(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
