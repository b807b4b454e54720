package probes

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// clockTick is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTick = 100

type cpuSnapshot struct {
	self        time.Duration // this process, user + system
	machineBusy time.Duration // all CPUs, non-idle
}

func snapshotCPU() (self, machine cpuSnapshot) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	machine.machineBusy = machineBusy()
	return self, machine
}

// machineBusy sums the non-idle time of all CPUs from /proc/stat.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are already in user
			continue
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTick
}

// MachineCPUs is the CPUs of the machine: the cpuN lines of /proc/stat,
// whose busy time the machine's figures are read from. runtime.NumCPU is
// this process's affinity mask, one CPU under `taskset -c 1`, against which
// the other processes' CPU of the whole machine reads as impossible.
func MachineCPUs() int {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if len(line) > 3 && strings.HasPrefix(line, "cpu") && line[3] >= '0' && line[3] <= '9' {
			n++
		}
	}
	return max(n, runtime.NumCPU())
}

func numCPU() int { return MachineCPUs() }

// availableCPUs is how many CPUs this process may run on.
func availableCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		return set.Count()
	}
	return runtime.NumCPU()
}

type procSample struct {
	cpu     time.Duration
	rss     int64
	threads int
	fds     int
	conns   int // established TCP connections on the target's port (arrival loads)
}

func readProc(pid int) (procSample, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	// The command name may hold spaces: fields start after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procSample{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22 {
		return procSample{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	// utime, stime, and cutime, cstime: children the process has waited for.
	var ticks int64
	for _, k := range []int{11, 12, 13, 14} {
		n, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += n
	}
	threads, _ := strconv.Atoi(f[17])
	rssPages, _ := strconv.ParseInt(f[21], 10, 64)
	s := procSample{cpu: time.Duration(ticks+liveChildrenTicks(pid)) * time.Second / clockTick, threads: threads, rss: rssPages * int64(os.Getpagesize())}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.fds = len(ents)
	}
	return s, nil
}

// liveChildrenTicks sums the CPU of pid's running children (a server's
// worker processes are part of the target's cost, not "other processes").
func liveChildrenTicks(pid int) int64 {
	names, ok := childrenOf(pid)
	if !ok {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return 0
		}
		for _, e := range ents {
			names = append(names, e.Name())
		}
	}
	var ticks int64
	for _, name := range names {
		child, err := strconv.Atoi(name)
		if err != nil || child == pid {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 15 || f[1] != strconv.Itoa(pid) {
			continue
		}
		for _, k := range []int{11, 12, 13, 14} {
			n, _ := strconv.ParseInt(f[k], 10, 64)
			ticks += n
		}
	}
	return ticks
}

// childrenOf lists pid's children from each of its threads' children
// file (Linux 3.5 and later): a few small reads where a walk of /proc
// read every process's stat — 3% of probe's CPU at 11,000 requests a
// second, sampling every 500 ms. ok is false when the kernel keeps no
// such file.
func childrenOf(pid int) (names []string, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) && t.Name() == strconv.Itoa(pid) {
				return nil, false // no CONFIG_PROC_CHILDREN
			}
			continue // a thread that ended
		}
		names = append(names, strings.Fields(string(b))...)
	}
	return names, true
}

// procSampler samples a process's saturation signals during a run (seed 003).
type procSampler struct {
	pid    int
	mu     sync.Mutex
	stats  ProcStats
	last   procSample
	ok     bool
	stopFn func()
}

func startProcSampler(pid int, every time.Duration) *procSampler {
	p := &procSampler{pid: pid}
	p.sample()
	p.stopFn = Every(every, func(time.Time) { p.sample() })
	return p
}

func (p *procSampler) sample() {
	s, err := readProc(p.pid)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.ok = s, true
	p.stats.Samples++
	p.stats.MaxRSS = max(p.stats.MaxRSS, s.rss)
	p.stats.MaxThreads = max(p.stats.MaxThreads, s.threads)
	p.stats.MaxFDs = max(p.stats.MaxFDs, s.fds)
}

// cpuNow samples now and returns the process's CPU time so far.
func (p *procSampler) cpuNow() time.Duration {
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.cpu
}

func (p *procSampler) stop() *ProcStats {
	p.stopFn()
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ok {
		return nil
	}
	st := p.stats
	st.PID, st.CPU = p.pid, p.last.cpu
	return &st
}

// Pin places this process on the CPUs but the first and pid on the first,
// so that generator and target do not take each other's CPU time (seed 002).
// It returns false where the machine has fewer than two CPUs.
func Pin(pid int) (bool, error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return false, err
	}
	var cpus []int
	for i := 0; i < 1024 && len(cpus) < all.Count(); i++ {
		if all.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		return false, nil
	}
	var target, gen unix.CPUSet
	target.Set(cpus[0])
	for _, c := range cpus[1:] {
		gen.Set(c)
	}
	if err := setAffinityAllThreads(pid, &target); err != nil {
		return false, fmt.Errorf("pin target: %v", err)
	}
	if err := setAffinityAllThreads(os.Getpid(), &gen); err != nil {
		return false, fmt.Errorf("pin probe: %v", err)
	}
	return true, nil
}

// setAffinityAllThreads applies set to every thread of pid: sched_setaffinity
// acts on one thread, and threads made later inherit their creator's set.
func setAffinityAllThreads(pid int, set *unix.CPUSet) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return err
		}
	}
	return nil
}

// RSS is the resident memory of process pid, in bytes.
func RSS(pid int) (int64, error) {
	s, err := readProc(pid)
	return s.rss, err
}

// CPUsOf is how many CPUs process pid may run on (this machine's when it
// cannot be read).
func CPUsOf(pid int) int {
	var set unix.CPUSet
	if pid > 0 && unix.SchedGetaffinity(pid, &set) == nil && set.Count() > 0 {
		return set.Count()
	}
	return runtime.NumCPU()
}

// WaitIdle waits until process pid has used under a tenth of a CPU for
// 500 ms in a row (a server that has just loaded still collects the
// garbage of its load, and a change timed then pays for it), or until
// max; it says whether the process went idle.
func WaitIdle(pid int, max time.Duration) bool {
	deadline := time.Now().Add(max)
	last, err := readProc(pid)
	if err != nil {
		return false
	}
	quiet := 0
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		s, err := readProc(pid)
		if err != nil {
			return false
		}
		if s.cpu-last.cpu < 10*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
		if quiet >= 5 {
			return true
		}
		last = s
	}
	return false
}
