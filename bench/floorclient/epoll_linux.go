package main

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// runEpoll is wrk's design in Go: one goroutine, one epoll, every
// connection's non-blocking socket read and written with raw syscalls,
// edge-triggered, no netpoller and no scheduler between a reply and the
// next request. It returns the replies read whole before end.
func runEpoll(host string, conns int, req []byte, end time.Time) (int64, error) {
	addr, err := net.ResolveTCPAddr("tcp", host)
	if err != nil {
		return 0, err
	}
	ip4 := addr.IP.To4()
	if ip4 == nil {
		return 0, errors.New("-epoll takes an IPv4 address")
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(epfd)
	type conn struct {
		fd   int
		buf  []byte
		have int
	}
	cs := make([]*conn, conns)
	for i := range cs {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		defer syscall.Close(fd)
		sa := &syscall.SockaddrInet4{Port: addr.Port}
		copy(sa.Addr[:], ip4)
		if err := syscall.Connect(fd, sa); err != nil { // blocking: set-up, not measured
			return 0, err
		}
		syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		syscall.SetNonblock(fd, true)
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | 1<<31, Fd: int32(i)} // EPOLLET
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return 0, err
		}
		cs[i] = &conn{fd: fd, buf: make([]byte, 16<<10)}
		if _, err := syscall.Write(fd, req); err != nil {
			return 0, err
		}
	}
	var events [128]syscall.EpollEvent
	var n int64
	for time.Now().Before(end) {
		k, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)),
			100, 0, 0)
		switch e {
		case 0:
		case syscall.EINTR: // the runtime's preemption signal
			k = 0
		default:
			return n, e
		}
		for _, ev := range events[:k] {
			c := cs[ev.Fd]
			for {
				m, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&c.buf[c.have])), uintptr(len(c.buf)-c.have))
				if e == syscall.EAGAIN {
					break
				}
				if e != 0 || m == 0 {
					return n, errors.New("connection lost")
				}
				short := int(m) < len(c.buf)-c.have
				c.have += int(m)
				if whole(c.buf[:c.have]) {
					n++
					c.have = 0
					if _, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&req[0])), uintptr(len(req))); e != 0 {
						return n, e
					}
				}
				if short { // drained: the next bytes come with an edge of their own
					break
				}
			}
		}
	}
	return n, nil
}

// whole says b holds one reply with its Content-Length body.
func whole(b []byte) bool {
	head := bytes.Index(b, []byte("\r\n\r\n"))
	if head < 0 {
		return false
	}
	i := bytes.Index(b[:head], []byte("Content-Length: "))
	if i < 0 {
		return false
	}
	j := bytes.IndexByte(b[i:head+2], '\r')
	size, err := strconv.Atoi(string(b[i+16 : i+j]))
	return err == nil && len(b) >= head+4+size
}
