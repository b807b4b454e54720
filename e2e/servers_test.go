package e2e

import (
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/probehq/probe/internal/cli/shared"
)

// freeAddr is a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
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
