// Package selfserve runs a test's server in a process of its own: the test
// binary again, whose TestMain serves when the test's variables say so. A
// fatal error, a profile or a CPU bound then takes the child, not the
// test's process.
package selfserve

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Start runs the test binary again, running no test, with env added (the
// variables that make its TestMain serve), killed and reaped when the
// test ends. It returns the URL the child prints first (as Serve does),
// the command, and the child's stderr so far (read it after cmd.Wait).
func Start(t testing.TB, env ...string) (*url.URL, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd, out, stderr := Rerun(t, "^$", env...)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Wait()
		t.Fatalf("the child server did not start: %v\n%s", err, stderr)
	}
	u, err := url.Parse(strings.TrimSpace(strings.TrimPrefix(line, "listening on ")))
	if err != nil {
		t.Fatal(err)
	}
	return u, cmd, stderr
}

// Rerun runs the test binary again, running the tests run matches, with
// env added, killed and reaped when the test ends. It returns the command,
// its stdout to read and its stderr so far (read it after cmd.Wait).
func Rerun(t testing.TB, run string, env ...string) (*exec.Cmd, io.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+run)
	cmd.Env = append(os.Environ(), env...)
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, out, stderr
}

// Serve serves h on a port of 127.0.0.1 and prints "listening on URL",
// the line Start reads.
func Serve(h http.Handler) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening on http://%s\n", l.Addr())
	return http.Serve(l, h)
}
