package target

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/probehq/probe/lib/crash"
	"github.com/probehq/probe/result"
)

// BuildCommand is argv run in dir as a build is, both its streams into
// one buffer. A build is a tree of processes (go build runs compilers):
// cancelling ctx kills its whole process group, and Run stops reading its
// output a second later instead of waiting for grandchildren to let go.
func BuildCommand(ctx context.Context, dir string, argv ...string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	output := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = output, output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd, output
}

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

// ChildSpec says how to start a target process and how to know it serves.
type ChildSpec struct {
	Argv []string
	Env  []string // added to probe's environment
	Dir  string   // working directory; default probe's
	Wait time.Duration
	// Addr, when set, is where the process will listen: it is ready once a
	// TCP connection there succeeds. Otherwise it is ready when it prints a
	// line holding its URL on stdout.
	Addr string
	// MemLimit caps the private memory the process maps (RLIMIT_DATA: its
	// heap, its threads' stacks), set as it starts; 0: none. Not the
	// address space (RLIMIT_AS): Go's runtime reserves nearly all of an
	// address-space cap at start, and a 300 MB allocation dies under 1 GiB.
	MemLimit uint64
	Stderr   io.Writer // gets a copy of stderr (e.g. to watch for recovered panics)
}

// Start starts a supervised child and waits until it serves.
func Start(ctx context.Context, spec ChildSpec) (*Child, error) {
	argv := spec.Argv
	if len(argv) == 0 {
		return nil, errors.New("no command to start")
	}
	if spec.MemLimit > 0 {
		// The cap must hold from exec on: set on a running Go process it can
		// land in the middle of the runtime's start and kill it. The shell's
		// ulimit sets it, then exec keeps the process id.
		// The program is looked up here so that a missing one reads as it
		// does without the cap, not as the shell's complaint.
		path, err := exec.LookPath(argv[0])
		if err != nil {
			return nil, fmt.Errorf("start %s: %v", spec.Argv[0], unwrapExecError(err))
		}
		argv = append([]string{"/bin/sh", "-c", `ulimit -d "$1" && shift && exec "$@"`, spec.Argv[0],
			strconv.FormatUint(spec.MemLimit>>10, 10), path}, argv[1:]...)
	}
	// The child's temporary files go into a folder of its own, removed when
	// it ends however it ends: a server killed by a crash (a fuzz run
	// restarts one per crash) runs no deferred clean-up of its own.
	tmp, err := os.MkdirTemp("", "probe-child-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), spec.Env...), "TMPDIR="+tmp)
	cmd.Dir = spec.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &Child{cmd: cmd, Stderr: &StreamCounter{}, exited: make(chan struct{})}
	cmd.Stderr = c.Stderr
	if spec.Stderr != nil {
		cmd.Stderr = io.MultiWriter(c.Stderr, spec.Stderr)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start %s: %v", spec.Argv[0], unwrapExecError(err))
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		found := false
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "http://"); i >= 0 && !found && spec.Addr == "" {
				found = true
				urls <- strings.Fields(sc.Text()[i:])[0]
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		c.waitErr = cmd.Wait()
		os.RemoveAll(tmp)
		close(c.exited)
	}()
	if spec.Addr != "" {
		go func() {
			for {
				conn, err := net.DialTimeout("tcp", spec.Addr, time.Second)
				if err == nil {
					conn.Close()
					urls <- "http://" + spec.Addr
					return
				}
				select {
				case <-c.exited:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	timer := time.NewTimer(spec.Wait)
	defer timer.Stop()
	select {
	case u := <-urls:
		if _, err := url.Parse(u); err != nil {
			c.Stop()
			return nil, fmt.Errorf("%s printed a bad URL %q", spec.Argv[0], u)
		}
		c.URL = u
		return c, nil
	case <-c.exited:
		return nil, fmt.Errorf("%s exited before it listened: %s", spec.Argv[0], c.ExitReason())
	case <-timer.C:
		c.Stop()
		if spec.Addr != "" {
			return nil, fmt.Errorf("%s did not listen on %s within %s", spec.Argv[0], spec.Addr, spec.Wait)
		}
		return nil, fmt.Errorf("%s did not print its URL within %s", spec.Argv[0], spec.Wait)
	case <-ctx.Done():
		c.Stop()
		return nil, ctx.Err()
	}
}

// unwrapExecError drops os/exec's repetition of the path.
func unwrapExecError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// Exit describes how the process ended; nil while it runs.
func (c *Child) Exit() *result.Exit {
	select {
	case <-c.exited:
	default:
		return nil
	}
	status := "exit status 0"
	if c.waitErr != nil {
		status = c.waitErr.Error()
	}
	return &result.Exit{Status: status, Stderr: c.Stderr.Head()}
}

// PID is the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// CPUFromNow starts reading the CPU the process and its live children
// use; the function it returns ends the reading, false where there is no
// process to read (a nil Child: a target probe did not start).
func (c *Child) CPUFromNow() func() (time.Duration, bool) {
	if c == nil {
		return func() (time.Duration, bool) { return 0, false }
	}
	before, err := ProcessCPU(c.PID())
	return func() (time.Duration, bool) {
		after, err2 := ProcessCPU(c.PID())
		return after - before, err == nil && err2 == nil
	}
}

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
	if line := crash.FirstFatalLine(c.Stderr.Head()); line != "" {
		return status + ": " + line
	}
	if lines := strings.Split(strings.TrimSpace(c.Stderr.Head()), "\n"); lines[len(lines)-1] != "" {
		last := lines[len(lines)-1]
		if len(last) > 300 {
			last = last[:300] + "…"
		}
		return status + ": " + last
	}
	return status
}

// Kill ends the process and its group at once: a target that hangs on an
// input would only wait out a graceful shutdown.
func (c *Child) Kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.exited
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
