package target

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestListenHelperProcess is not a test: run with PROBE_TEST_LISTEN set,
// it is a process that listens there (SO_REUSEPORT with
// PROBE_TEST_REUSEPORT), prints the address and waits for stdin to close.
func TestListenHelperProcess(t *testing.T) {
	addr := os.Getenv("PROBE_TEST_LISTEN")
	if addr == "" {
		t.Skip("a helper process of TestListenerOfTheTargetsAddress")
	}
	lc := net.ListenConfig{}
	if os.Getenv("PROBE_TEST_REUSEPORT") != "" {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
			if err != nil {
				return err
			}
			return serr
		}
	}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println(ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// listenIn starts a process listening on addr and returns it and the
// address it listens on.
func listenIn(t *testing.T, addr string, reusePort bool) (int, string) {
	t.Helper()
	pid, got, err := tryListenIn(t, addr, reusePort)
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	return pid, got
}

// listenPairIn is two processes listening on one port: at first (an
// address) and at 127.0.0.2. The port first got may be taken at 127.0.0.2
// by another process (probe ws's connections come from 127.0.0.2 too):
// then another port, a few times.
func listenPairIn(t *testing.T, first string, reusePort bool) (pid1 int, addr1 string, pid2 int, addr2 string) {
	t.Helper()
	for try := 0; ; try++ {
		pid1, addr1 = listenIn(t, first+":0", reusePort)
		_, port, _ := net.SplitHostPort(addr1)
		var err error
		if pid2, addr2, err = tryListenIn(t, "127.0.0.2:"+port, reusePort); err == nil {
			return pid1, addr1, pid2, addr2
		} else if try == 9 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("listening on 127.0.0.2:%s: %v", port, err)
		}
	}
}

// tryListenIn is listenIn that says why the process could not listen.
func tryListenIn(t *testing.T, addr string, reusePort bool) (int, string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestListenHelperProcess$")
	cmd.Env = append(os.Environ(), "PROBE_TEST_LISTEN="+addr)
	if reusePort {
		cmd.Env = append(cmd.Env, "PROBE_TEST_REUSEPORT=1")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error") {
		return 0, "", fmt.Errorf("%q, %v", line, err)
	}
	return cmd.Process.Pid, strings.TrimSpace(line), nil
}

// Two servers on one port, at 127.0.0.1 and 127.0.0.2, in two processes:
// each address is found to be its own server's.
func TestListenerOfTheTargetsAddress(t *testing.T) {
	pid1, addr1, pid2, addr2 := listenPairIn(t, "127.0.0.1", false)
	_, port, _ := net.SplitHostPort(addr1)
	for addr, want := range map[string]int{addr1: pid1, addr2: pid2} {
		l, err := FindListener(addr)
		if err != nil || l.PID != want {
			t.Errorf("FindListener(%s): pid %d, %v; want %d", addr, l.PID, err, want)
		}
		if l.Bound != addr || l.Why != "" {
			t.Errorf("FindListener(%s): bound %q, why %q; want its own address, no doubt", addr, l.Bound, l.Why)
		}
	}
	if _, err := FindListener("127.0.0.3:" + port); err == nil {
		t.Error("127.0.0.3, where nothing listens, was found")
	}
}

// A wildcard listener and one bound to an address on the same port
// (SO_REUSEPORT): the address's own wins, and the choice is said; another
// address goes to the wildcard one.
func TestLocalListenerExactBeforeWildcard(t *testing.T) {
	wild, wildAddr, exact, _ := listenPairIn(t, "0.0.0.0", true)
	_, port, _ := net.SplitHostPort(wildAddr)
	l, err := FindListener("127.0.0.2:" + port)
	if err != nil || l.PID != exact {
		t.Fatalf("127.0.0.2: pid %d, %v; want %d (wildcard %d)", l.PID, err, exact, wild)
	}
	// Go listens on 0.0.0.0 with a dual-stack [::] socket.
	wildBound := map[string]bool{"0.0.0.0:" + port: true, "[::]:" + port: true}
	if !strings.Contains(l.Why, fmt.Sprintf(":%s (pid %d)", port, wild)) || !strings.Contains(l.Why, "bound to that address") {
		t.Errorf("why %q: want the wildcard named and the reason", l.Why)
	}
	l, err = FindListener("127.0.0.3:" + port)
	if err != nil || l.PID != wild || !wildBound[l.Bound] {
		t.Errorf("127.0.0.3: %+v, %v; want the wildcard's pid %d", l, err, wild)
	}
	if l, err := FindListener("localhost:" + port); err != nil || l.PID != wild {
		t.Errorf("localhost: pid %d, %v; want the wildcard's %d", l.PID, err, wild)
	}
}

// The target's connections are those at its address: another server's on
// the same port at another address are not counted.
func TestLocalConnectionsAtTheTargetsAddress(t *testing.T) {
	_, addr1, _, addr2 := listenPairIn(t, "127.0.0.1", false)
	for addr, n := range map[string]int{addr1: 1, addr2: 3} {
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		got1, got2 := Connections(addr1), Connections(addr2)
		if got1 == 1 && got2 == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections at %s: %d, at %s: %d; want 1 and 3", addr1, got1, addr2, got2)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childrenOf finds the children a walk of /proc finds: here, two this
// test starts, from whichever threads the runtime forked them.
func TestChildrenOfMatchesAWalkOfProc(t *testing.T) {
	var cmds []*exec.Cmd
	for range 2 {
		c := exec.Command("sleep", "5")
		if err := c.Start(); err != nil {
			t.Skip(err)
		}
		cmds = append(cmds, c)
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	names, ok := childrenOf(os.Getpid())
	if !ok {
		t.Skip("the kernel keeps no /proc/PID/task/TID/children")
	}
	got := map[string]bool{}
	for _, n := range names {
		got[n] = true
	}
	for _, c := range cmds {
		if !got[strconv.Itoa(c.Process.Pid)] {
			t.Errorf("child %d not among %v", c.Process.Pid, names)
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && !got[e.Name()] {
			t.Errorf("the walk finds child %s, childrenOf does not (%v)", e.Name(), names)
		}
	}
}
