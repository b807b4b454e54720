package h1

import (
	"io"
	"iter"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Loop runs clients as coroutines over one epoll of its own, wrk's design:
// a reply wakes no goroutine and costs the scheduler nothing, the client's
// code runs on at once in the loop's goroutine, and a read that would find
// nothing waits for the socket's edge instead. Its sockets are raw, not in
// Go's netpoller: one the runtime also watched would wake the runtime's own
// poll on every reply (measured: 7 µs a request more, with the runtime's
// thread and ours on one CPU). The loop holds a P while it waits in
// epoll_pwait, so it runs with GOMAXPROCS one higher: the rest of the
// process (profile captures, the progress line, a server in the same
// process) keeps a P of its own.
//
// A client is a function given to Go; in it, a Conn whose Loop is this one
// reads, writes, dials and sleeps by yielding to the loop. Deadlines and
// Interrupt hold as on a net.Conn, to within scanEvery.
type Loop struct {
	epfd  int
	base  time.Time // the loop's clock: nanoseconds since base
	tasks []*task
	socks []*loopSocket // by id (the epoll event's data)
	free  []int32       // ids of closed sockets
	cur   *task         // the task running now
	ready []*task
	live  int
	// interrupts counts Interrupts and deadlines set in the past from
	// other goroutines: a change makes the loop look at every task now.
	interrupts atomic.Int64
	stopped    atomic.Bool
	// clock is the loop's time when it last woke: reads and writes check
	// their deadline against it, not against a clock read each.
	clock int64
	names map[string]*lookup // host names' addresses, looked up once a loop
}

// scanEvery is how often the loop looks for deadlines passed and sleeps
// over, and the longest it waits in epoll_pwait.
const scanEvery = 5 * time.Millisecond

// task is one client: a coroutine, and what it waits for.
type task struct {
	next    func() (struct{}, bool)
	yield   func(struct{}) bool
	sock    *loopSocket // the socket it waits on; nil: a sleep
	write   bool        // it waits to write (or to connect), not to read
	waiting bool
	wake    int64 // a sleep's end, in the loop's nanoseconds
}

// NewLoop makes a loop; its clients are given with Go and run by Run.
func NewLoop() (*Loop, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	return &Loop{epfd: fd, base: time.Now(), names: map[string]*lookup{}}, nil
}

// Go adds a client; it starts when Run does.
func (l *Loop) Go(client func()) {
	t := &task{}
	t.next, _ = iter.Pull(func(yield func(struct{}) bool) {
		t.yield = yield
		client()
	})
	l.tasks = append(l.tasks, t)
}

// Interrupt ends every wait now: reads and writes return a timeout, sleeps
// return false. Safe from any goroutine.
func (l *Loop) Interrupt() {
	l.stopped.Store(true)
	l.interrupts.Add(1)
}

// Sleep waits d within a client of the loop; false: the loop was
// interrupted.
func (l *Loop) Sleep(d time.Duration) bool {
	t := l.cur
	t.sock, t.wake = nil, l.now()+int64(d)
	for !l.stopped.Load() && l.now() < t.wake {
		l.park(t)
	}
	return !l.stopped.Load()
}

func (l *Loop) now() int64 { return int64(time.Since(l.base)) }

// Run runs the clients until every one has returned, then closes the loop.
func (l *Loop) Run() {
	raiseProcs()
	defer lowerProcs()
	defer func() {
		// Its clients' sockets may be closed after it (RunLoad closes
		// them at the end): they then leave no epoll, whose number may
		// be another file's by then.
		syscall.Close(l.epfd)
		l.epfd = -1
	}()
	l.live, l.clock = len(l.tasks), l.now()
	for _, t := range l.tasks {
		l.resume(t)
	}
	var events [256]syscall.EpollEvent
	seen := l.interrupts.Load()
	nextScan := l.now() + int64(scanEvery)
	for l.live > 0 {
		n := epollWait(l.epfd, events[:], int(scanEvery/time.Millisecond))
		for _, ev := range events[:n] {
			l.event(ev)
		}
		now := l.now()
		l.clock = now
		if now >= nextScan || l.interrupts.Load() != seen {
			seen, nextScan = l.interrupts.Load(), now+int64(scanEvery)
			l.scan(now)
		}
		for len(l.ready) > 0 {
			t := l.ready[len(l.ready)-1]
			l.ready = l.ready[:len(l.ready)-1]
			l.resume(t)
		}
	}
}

// event marks a socket's readiness and readies the task waiting for it.
func (l *Loop) event(ev syscall.EpollEvent) {
	if int(ev.Fd) >= len(l.socks) {
		return
	}
	s := l.socks[ev.Fd]
	if s == nil {
		return
	}
	const errs = syscall.EPOLLERR | syscall.EPOLLHUP
	if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|errs) != 0 {
		s.rready = true
	}
	if ev.Events&(syscall.EPOLLRDHUP|errs) != 0 {
		s.hup = true
	}
	if ev.Events&(syscall.EPOLLOUT|errs) != 0 {
		s.wready = true
	}
	if t := s.task; t != nil && t.waiting && t.sock == s && (t.write && s.wready || !t.write && s.rready) {
		l.wakeTask(t)
	}
}

// scan readies the tasks whose deadline or sleep has passed, and all of
// them after an Interrupt.
func (l *Loop) scan(now int64) {
	stopped := l.stopped.Load()
	for _, t := range l.tasks {
		if !t.waiting {
			continue
		}
		switch {
		case stopped:
		case t.sock == nil && now < t.wake:
			continue
		case t.sock != nil && !t.sock.expired(now):
			continue
		}
		l.wakeTask(t)
	}
}

func (l *Loop) wakeTask(t *task) {
	t.waiting = false
	l.ready = append(l.ready, t)
}

func (l *Loop) resume(t *task) {
	l.cur = t
	if _, ok := t.next(); !ok {
		l.live--
	}
	l.cur = nil
}

// park hands the loop back until t is readied.
func (l *Loop) park(t *task) {
	t.waiting = true
	t.yield(struct{}{})
}

// wait parks the running task until s is readable (or writable), its
// deadline passes or the loop is interrupted.
func (l *Loop) wait(s *loopSocket, write bool) {
	t := l.cur
	if t == nil {
		panic("h1: a Loop's connection used outside its clients")
	}
	s.task, t.sock, t.write = t, s, write
	l.park(t)
}

// add registers s with the loop's epoll, edge-triggered.
func (l *Loop) add(s *loopSocket) error {
	if n := len(l.free); n > 0 {
		s.id, l.free = l.free[n-1], l.free[:n-1]
		l.socks[s.id] = s
	} else {
		s.id = int32(len(l.socks))
		l.socks = append(l.socks, s)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT | syscall.EPOLLRDHUP | edgeTriggered, Fd: s.id}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
		l.socks[s.id], l.free = nil, append(l.free, s.id)
		return err
	}
	return nil
}

// epollWait is one epoll_pwait, raw: the loop holds its P while it waits
// (a blocking syscall would have the system monitor hand the P on after
// 20 µs, waking another thread each time).
func epollWait(epfd int, events []syscall.EpollEvent, msec int) int {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(msec), 0, 0)
	if e != 0 { // EINTR: the runtime's preemption signal
		return 0
	}
	return int(n)
}

// loopSocket is a Loop's connection: a non-blocking socket read and
// written with raw syscalls. rready and wready say an edge came since it
// was last found not ready: a socket found drained gets an edge when bytes
// come, so a read waits for one first (one read a reply, as rawIO's
// exchange has on Go's netpoller). hup says the peer has closed or reset:
// its edge may have come before the read that took the last bytes, and
// none comes again, so from then on every read is made (it finds the end
// of file at once, where waiting for an edge would wait for the deadline:
// a server that half-closes after its reply and lingers).
type loopSocket struct {
	l              *Loop
	fd             int
	id             int32
	task           *task // the task that last waited on it
	rready, wready bool
	hup            bool
	closed         bool
	deadline       atomic.Int64 // in the loop's nanoseconds; 0: none
	local, peer    net.Addr
}

// SetDeadline is net.Conn's: reads and writes after t fail with a
// timeout. Safe from any goroutine (Conn.Interrupt sets one in the past).
func (s *loopSocket) SetDeadline(t time.Time) error {
	if t.IsZero() {
		s.deadline.Store(0)
		return nil
	}
	d := max(int64(t.Sub(s.l.base)), 1)
	s.deadline.Store(d)
	if d <= s.l.now() {
		s.l.interrupts.Add(1)
	}
	return nil
}

func (s *loopSocket) expired(now int64) bool {
	d := s.deadline.Load()
	return d != 0 && now >= d
}

func (s *loopSocket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if err := s.check("read"); err != nil {
			return 0, err
		}
		if !s.rready && !s.hup {
			s.l.wait(s, false)
			continue
		}
		n, e := readFD(uintptr(s.fd), p)
		switch e {
		case 0:
			if n < len(p) {
				s.rready = false // drained: more bytes bring an edge
			}
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case syscall.EAGAIN:
			s.rready = false
			s.l.wait(s, false) // even after a hup: no read again before an edge or the deadline
		case syscall.EINTR:
		default:
			return 0, s.opError("read", os.NewSyscallError("read", e))
		}
	}
}

func (s *loopSocket) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		if err := s.check("write"); err != nil {
			return done, err
		}
		if !s.wready {
			s.l.wait(s, true)
			continue
		}
		n, e := writeFD(uintptr(s.fd), p[done:])
		switch e {
		case 0:
			done += n
		case syscall.EAGAIN:
			s.wready = false
		case syscall.EINTR:
		default:
			return done, s.opError("write", os.NewSyscallError("write", e))
		}
	}
	return done, nil
}

// check is the error a read or write meets before it starts: the socket
// closed here, its deadline passed or the loop interrupted.
func (s *loopSocket) check(op string) error {
	switch {
	case s.closed:
		return s.opError(op, net.ErrClosed)
	case s.l.stopped.Load() || s.expired(s.l.clock):
		return s.opError(op, os.ErrDeadlineExceeded)
	}
	return nil
}

// peerClosed peeks without waiting: a kept-alive connection the server
// closed reads as end of file.
func (s *loopSocket) peerClosed() bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(s.fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n == 0 && err == nil
}

// Close closes the socket (which leaves the epoll with it).
func (s *loopSocket) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	// Out of the epoll before the close: a copy of the file (a fork in
	// progress) would keep its events coming under an id reused.
	if s.l.epfd >= 0 {
		syscall.EpollCtl(s.l.epfd, syscall.EPOLL_CTL_DEL, s.fd, nil)
	}
	s.l.socks[s.id], s.l.free = nil, append(s.l.free, s.id)
	if s.task != nil && s.task.sock == s {
		s.task.sock = nil
	}
	return syscall.Close(s.fd)
}

func (s *loopSocket) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: s.local, Addr: s.peer, Err: err}
}

// GOMAXPROCS is raised by one for each loop running, and put back when the
// last ends.
var procs struct {
	sync.Mutex
	loops, base int
}

func raiseProcs() {
	procs.Lock()
	defer procs.Unlock()
	if procs.loops == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.loops++
	runtime.GOMAXPROCS(procs.base + procs.loops)
}

func lowerProcs() {
	procs.Lock()
	defer procs.Unlock()
	procs.loops--
	runtime.GOMAXPROCS(procs.base + procs.loops)
}

// edgeTriggered is EPOLLET as the event's uint32 (syscall's constant is
// a negative int).
const edgeTriggered = 1 << 31

// Procs is GOMAXPROCS less the running loops' own Ps: what the process
// has for its goroutines, and so how many loops a run may start.
func Procs() int {
	procs.Lock()
	defer procs.Unlock()
	if procs.loops > 0 {
		return procs.base
	}
	return runtime.GOMAXPROCS(0)
}
