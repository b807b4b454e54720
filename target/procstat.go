package target

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

	"github.com/probehq/probe/lib/machine"
	"github.com/probehq/probe/lib/tick"
	"github.com/probehq/probe/result"

	"golang.org/x/sys/unix"
)

// clockTick is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTick = 100

// cpuSnapshot is the CPU used so far by probe and by the whole machine:
// the difference of two is a window's.
type cpuSnapshot struct {
	self        time.Duration // this process, user + system
	machineBusy time.Duration // all CPUs, non-idle
}

// snapshotCPU reads probe's CPU and the machine's now.
func snapshotCPU() cpuSnapshot {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return cpuSnapshot{self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), machineBusy: machineBusy()}
}

// machineTimes is the times of all CPUs from /proc/stat's first line
// (user, nice, system, idle, iowait, …), in clock ticks; nil: not read.
func machineTimes() []int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" {
		return nil
	}
	times := make([]int64, len(f)-1)
	for i, v := range f[1:] {
		times[i], _ = strconv.ParseInt(v, 10, 64)
	}
	return times
}

// machineBusy sums the non-idle time of all CPUs from /proc/stat.
func machineBusy() time.Duration {
	var busy int64
	for i, n := range machineTimes() {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are already in user
			continue
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTick
}

// MachineIdle is the machine's idle time so far, all CPUs' (idle and
// iowait), and its CPUs (0: not read).
func MachineIdle() (time.Duration, int) {
	t := machineTimes()
	if t == nil {
		return 0, 0
	}
	return time.Duration(t[3]+t[4]) * time.Second / clockTick, machine.CPUs()
}

// AvailableCPUs is how many CPUs this process may run on.
func AvailableCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		return set.Count()
	}
	return runtime.NumCPU()
}

// Sample is one reading of a process.
type Sample struct {
	CPU     time.Duration // its own and its children's so far
	RSS     int64
	Threads int
	FDs     int
	Conns   int // established TCP connections on the target's port (arrival loads; set by the caller)
}

// ReadProc reads process pid from /proc.
func ReadProc(pid int) (Sample, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Sample{}, err
	}
	// The command name may hold spaces: fields start after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Sample{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22 {
		return Sample{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	// utime, stime, and cutime, cstime: children the process has waited for.
	var ticks int64
	for _, k := range []int{11, 12, 13, 14} {
		n, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += n
	}
	threads, _ := strconv.Atoi(f[17])
	rssPages, _ := strconv.ParseInt(f[21], 10, 64)
	s := Sample{CPU: time.Duration(ticks+liveChildrenTicks(pid)) * time.Second / clockTick, Threads: threads,
		RSS: rssPages * int64(os.Getpagesize())}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.FDs = len(ents)
	}
	return s, nil
}

// ProcessCPU is the CPU time pid and its live children have used so far.
func ProcessCPU(pid int) (time.Duration, error) {
	s, err := ReadProc(pid)
	return s.CPU, err
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

// Sampler samples a process's saturation signals during a run (seed 003).
type Sampler struct {
	pid    int
	mu     sync.Mutex
	stats  result.ProcStats
	last   Sample
	ok     bool
	stopFn func()
}

// StartSampler samples pid now and then every until Stop.
func StartSampler(pid int, every time.Duration) *Sampler {
	p := &Sampler{pid: pid}
	p.sample()
	p.stopFn = tick.Every(every, func(time.Time) { p.sample() })
	return p
}

func (p *Sampler) sample() {
	s, err := ReadProc(p.pid)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.ok = s, true
	p.stats.Samples++
	p.stats.MaxRSS = max(p.stats.MaxRSS, s.RSS)
	p.stats.MaxThreads = max(p.stats.MaxThreads, s.Threads)
	p.stats.MaxFDs = max(p.stats.MaxFDs, s.FDs)
}

// cpuNow samples now and returns the process's CPU time so far.
func (p *Sampler) cpuNow() time.Duration {
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.CPU
}

// Stop ends the sampling: the process's figures over it, nil when it was never read.
func (p *Sampler) Stop() *result.ProcStats {
	p.stopFn()
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ok {
		return nil
	}
	st := p.stats
	st.PID, st.CPU = p.pid, p.last.CPU
	return &st
}

// childrenCPU is the CPU pid's child processes have used so far: those it
// waited for and the live ones (0 when /proc cannot tell).
func childrenCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0
	}
	ticks := liveChildrenTicks(pid)
	for _, k := range []int{13, 14} { // cutime, cstime
		n, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTick
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
	s, err := ReadProc(pid)
	return s.RSS, err
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
	last, err := ReadProc(pid)
	if err != nil {
		return false
	}
	quiet := 0
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		s, err := ReadProc(pid)
		if err != nil {
			return false
		}
		if s.CPU-last.CPU < 10*time.Millisecond {
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
