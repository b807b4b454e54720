package ws

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/probehq/probe/lib/frames"
	"github.com/probehq/probe/lib/pprofio"
	"github.com/probehq/probe/lib/redirect"
	"github.com/probehq/probe/result"
	"github.com/probehq/probe/target"

	"github.com/google/pprof/profile"
)

// pprofClient fetches the target's profiles and goroutine counts: a 3xx
// is refused, not followed (lib/redirect).
var pprofClient = &http.Client{CheckRedirect: redirect.Refuse("the pprof fetch")}

// sampler watches the target's resident memory, descriptors and CPU, and
// probe's own memory, every 200 ms: the peaks are what a fan-out costs.
// Every second it also keeps a sample of the target for the timeline.
type sampler struct {
	pid      int
	mu       sync.Mutex
	rss      int64
	rss0     int64
	fds      int
	own      int64
	cpu0     time.Duration
	cpu      time.Duration
	start    time.Time
	last     result.WSSample // the timeline's last sample, for the next one's CPU
	lastCPU  time.Duration   // the target's CPU at it
	timeline []result.WSSample
	ticks    int
	stopOnce sync.Once
	done     chan struct{}
}

const (
	sampleEvery   = 200 * time.Millisecond
	timelineEvery = 5           // samples of sampleEvery: one a second
	timelineMax   = 2 * 60 * 60 // two hours of seconds; later ones are not kept
)

func startSampler(pid int) *sampler {
	s := &sampler{pid: pid, done: make(chan struct{}), start: time.Now()}
	s.cpu0 = procCPU(pid)
	s.lastCPU = s.cpu0
	s.sample()
	s.rss0 = s.rss
	go func() {
		t := time.NewTicker(sampleEvery)
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
		now := time.Now()
		pt := result.WSSample{AtS: now.Sub(s.start).Seconds()}
		if v, err := target.RSS(s.pid); err == nil {
			s.rss = max(s.rss, v)
			pt.RSSBytes = v
		}
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid)); err == nil {
			s.fds = max(s.fds, len(ents))
			pt.FDs = len(ents)
		}
		cpu := procCPU(s.pid)
		s.cpu = cpu - s.cpu0
		pt.Threads = procThreads(s.pid)
		if s.ticks%timelineEvery == 0 && len(s.timeline) < timelineMax {
			if dt := pt.AtS - s.last.AtS; len(s.timeline) > 0 && dt > 0 {
				pt.CPUCores = (cpu - s.lastCPU).Seconds() / dt
			}
			s.timeline = append(s.timeline, pt)
			s.last, s.lastCPU = pt, cpu
		}
		s.ticks++
	}
	if v, err := target.RSS(os.Getpid()); err == nil {
		s.own = max(s.own, v)
	}
}

func (s *sampler) first() int64 { s.mu.Lock(); defer s.mu.Unlock(); return s.rss0 }

// goroutines puts a goroutine count into the timeline's last sample.
func (s *sampler) goroutines(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := len(s.timeline); k > 0 && n > 0 {
		s.timeline[k-1].Goroutines = n
	}
}

// samples is the timeline so far.
func (s *sampler) samples() []result.WSSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]result.WSSample(nil), s.timeline...)
}

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
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// procThreads is the number of threads of process pid (0 when it cannot
// be read).
func procThreads(pid int) int {
	f := procStat(pid)
	if len(f) < 18 {
		return 0
	}
	n, _ := strconv.Atoi(f[17])
	return n
}

// procStat is the fields of /proc/pid/stat after the command, which may
// hold spaces and so is skipped to its last ')' (nil when it cannot be read).
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	return strings.Fields(string(b[i+1:]))
}

// goroutineCount is the target's number of goroutines: the first line of
// /debug/pprof/goroutine?debug=1 ("goroutine profile: total N"). The
// profile stops the world while it walks every goroutine, so a run takes
// it once a round, not once a second.
func goroutineCount(ctx context.Context, p *Profile) (int, error) {
	u := p.PprofURL.JoinPath("goroutine")
	u.RawQuery = "debug=1"
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := pprofClient.Do(req)
	if e := redirect.As(err); e != nil {
		return 0, fmt.Errorf("%s: %w", u.Path, e)
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: HTTP %d", u.Path, resp.StatusCode)
	}
	line, err := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	const head = "goroutine profile: total "
	if !strings.HasPrefix(line, head) {
		return 0, fmt.Errorf("%s: not a goroutine profile (%v)", u.Path, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, head)))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a count", u.Path, strings.TrimSpace(line))
	}
	return n, nil
}

// mainModule is the target's main module, from main.main in its
// goroutine profile (the main goroutine waits there); "" when unseen.
func mainModule(ctx context.Context, p *Profile) string {
	g, _, err := fetch(ctx, p, "goroutine", 0)
	if err != nil {
		return ""
	}
	return frames.MainModule(g)
}

// fetchWall reads fgprof's wall-clock profile of the next seconds.
func fetchWall(ctx context.Context, p *Profile, seconds int) (*profile.Profile, []byte, error) {
	u := *p.FgprofURL
	u.RawQuery = url.Values{"seconds": {strconv.Itoa(seconds)}, "format": {"pprof"}}.Encode()
	return fetchURL(ctx, p, &u, seconds)
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
	return fetchURL(ctx, p, u, seconds)
}

// fetchURL reads the profile at u, which takes seconds to make.
func fetchURL(ctx context.Context, p *Profile, u *url.URL, seconds int) (*profile.Profile, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := pprofClient.Do(req)
	if e := redirect.As(err); e != nil {
		return nil, nil, fmt.Errorf("%s: %w", u.Path, e)
	}
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
	prof, raw, _, err := pprofio.Read(resp.Body, limit) // invalid samples dropped
	return prof, raw, err
}

// delta is what a cumulative profile (mutex, block) counted between
// first and last; nil when nothing.
func delta(last, first *profile.Profile) (*profile.Profile, error) {
	d, err := target.ProfileDelta(last, first)
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
		return l.Cur, fmt.Errorf("%d file descriptors are needed; the limit is %d and cannot be raised further (hard "+
			"limit %d): ulimit -n %d", need, l.Cur, l.Max, need)
	}
	return l.Cur, nil
}
