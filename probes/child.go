package probes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Child is a target process probe started and supervises: it reads its
// stderr (lines and bytes are counted: a log storm is a finding) and knows
// when and how it ended.
type Child struct {
	cmd      *exec.Cmd
	URL      string
	Stderr   *StreamCounter
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// StreamCounter counts what a process writes and keeps its first lines.
type StreamCounter struct {
	mu    sync.Mutex
	lines int64
	bytes int64
	head  bytes.Buffer
}

const streamHead = 64 << 10

func (s *StreamCounter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes += int64(len(p))
	s.lines += int64(bytes.Count(p, []byte{'\n'}))
	if room := streamHead - s.head.Len(); room > 0 {
		s.head.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Counts reports lines and bytes written so far.
func (s *StreamCounter) Counts() (lines, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines, s.bytes
}

// Head is the start of the stream.
func (s *StreamCounter) Head() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head.String()
}

// FixtureOptions start the reference target as a child process.
type FixtureOptions struct {
	Executable string // a probe binary; default: this one
	Mode       string
	Notes      int
	Synthetic  bool
	Key        string
}

// StartFixture runs `probe fixture serve` on a free loopback port and waits
// until it listens (the vault's load takes seconds).
func StartFixture(ctx context.Context, o FixtureOptions) (*Child, error) {
	exe := o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	args := []string{"fixture", "serve", "--addr", "127.0.0.1:0"}
	if o.Mode != "" {
		args = append(args, "--mode", o.Mode)
	}
	if o.Notes > 0 {
		args = append(args, "--notes", fmt.Sprint(o.Notes))
	}
	if o.Synthetic {
		args = append(args, "--synthetic")
	}
	if o.Key != "" {
		args = append(args, "--key", o.Key)
	}
	return StartChild(ctx, append([]string{exe}, args...), nil, 3*time.Minute)
}

// StartChild starts argv and waits up to wait for a line on its stdout that
// holds its URL ("listening on http://…").
func StartChild(ctx context.Context, argv []string, env []string, wait time.Duration) (*Child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &Child{cmd: cmd, Stderr: &StreamCounter{}, exited: make(chan struct{})}
	cmd.Stderr = c.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", argv[0], err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		found := false
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "http://"); i >= 0 && !found {
				found = true
				urls <- strings.Fields(sc.Text()[i:])[0]
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { c.waitErr = cmd.Wait(); close(c.exited) }()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case u := <-urls:
		if _, err := url.Parse(u); err != nil {
			c.Stop()
			return nil, fmt.Errorf("%s printed a bad URL %q", argv[0], u)
		}
		c.URL = u
		return c, nil
	case <-c.exited:
		return nil, fmt.Errorf("%s exited before it listened: %s", argv[0], c.ExitReason())
	case <-timer.C:
		c.Stop()
		return nil, fmt.Errorf("%s did not print its URL within %s", argv[0], wait)
	case <-ctx.Done():
		c.Stop()
		return nil, ctx.Err()
	}
}

// Exit describes how the process ended; nil while it runs.
func (c *Child) Exit() *Exit {
	select {
	case <-c.exited:
	default:
		return nil
	}
	status := "exit status 0"
	if c.waitErr != nil {
		status = c.waitErr.Error()
	}
	return &Exit{Status: status, Stderr: c.Stderr.Head()}
}

// PID is the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Exited is closed when the process has ended.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// ExitReason says how the process ended: its status and the first line of
// stderr that names a fatal error.
func (c *Child) ExitReason() string {
	select {
	case <-c.exited:
	default:
		return "running"
	}
	status := "exited"
	if c.waitErr != nil {
		status = c.waitErr.Error()
	}
	if line := FirstFatalLine(c.Stderr.Head()); line != "" {
		return status + ": " + line
	}
	return status
}

// FirstFatalLine finds the line by which a Go process names its death.
func FirstFatalLine(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for _, prefix := range []string{"fatal error:", "panic:", "runtime:", "SIGKILL", "signal:"} {
		for _, l := range lines {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
				return l
			}
		}
	}
	return ""
}

// Stop ends the process: SIGTERM to its group, SIGKILL after 5 s.
func (c *Child) Stop() error {
	c.stopOnce.Do(func() {
		select {
		case <-c.exited:
			return
		default:
		}
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.exited
		}
	})
	var exit *exec.ExitError
	if c.waitErr != nil && !errors.As(c.waitErr, &exit) {
		return c.waitErr
	}
	return nil
}
