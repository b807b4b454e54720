package ws

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/probes"
)

// sampler watches the target's resident memory, descriptors and CPU, and
// probe's own memory, every 200 ms: the peaks are what a fan-out costs.
type sampler struct {
	pid      int
	mu       sync.Mutex
	rss      int64
	rss0     int64
	fds      int
	own      int64
	cpu0     time.Duration
	cpu      time.Duration
	stopOnce sync.Once
	done     chan struct{}
}

func startSampler(pid int) *sampler {
	s := &sampler{pid: pid, done: make(chan struct{})}
	s.cpu0 = procCPU(pid)
	s.sample()
	s.rss0 = s.rss
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pid > 0 {
		if v, err := probes.RSS(s.pid); err == nil {
			s.rss = max(s.rss, v)
		}
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid)); err == nil {
			s.fds = max(s.fds, len(ents))
		}
		s.cpu = procCPU(s.pid) - s.cpu0
	}
	if v, err := probes.RSS(os.Getpid()); err == nil {
		s.own = max(s.own, v)
	}
}

func (s *sampler) first() int64 { s.mu.Lock(); defer s.mu.Unlock(); return s.rss0 }

func (s *sampler) stop() {
	s.stopOnce.Do(func() { close(s.done); s.sample() })
}

func (s *sampler) peaks() (rss int64, fds int, own int64, cpu time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rss, s.fds, s.own, s.cpu
}

// procCPU is the user and system CPU process pid used so far (0 when it
// cannot be read).
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * (time.Second / 100) // USER_HZ is 100 on Linux
}

func ownCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fetch reads one profile of the target: name ("profile", "mutex",
// "block") with seconds when above 0.
func fetch(ctx context.Context, p *Profile, name string, seconds int) (*profile.Profile, []byte, error) {
	u := p.PprofURL.JoinPath(name)
	if seconds > 0 {
		u.RawQuery = url.Values{"seconds": {strconv.Itoa(seconds)}}.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s: HTTP %d", u.Path, resp.StatusCode)
	}
	limit := p.MaxProfile
	if limit <= 0 {
		limit = pprofio.DefaultLimit
	}
	return pprofio.Read(resp.Body, limit)
}

// delta is what a cumulative profile (mutex, block) counted between
// first and last; nil when nothing.
func delta(last, first *profile.Profile) (*profile.Profile, error) {
	d, err := probes.ProfileDelta(last, first)
	if err != nil || d == nil || len(d.Sample) == 0 {
		return nil, err
	}
	return d, nil
}

// FDLimit raises this process's soft limit of open files to what need
// asks (up to the hard limit): the limit now, and an error naming the
// ulimit to set when the hard limit is too low.
func FDLimit(need uint64) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, nil // cannot tell: let the run find out
	}
	if l.Cur >= need {
		return l.Cur, nil
	}
	was := l.Cur
	l.Cur = min(need, l.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		l.Cur = was
	}
	if l.Cur < need {
		return l.Cur, fmt.Errorf("%d file descriptors are needed; the limit is %d and cannot be raised further (hard limit %d): ulimit -n %d", need, l.Cur, l.Max, need)
	}
	return l.Cur, nil
}
