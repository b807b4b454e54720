package h1

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// lookup is a host name's addresses, looked up on a goroutine of its own:
// a slow resolver holds up the client that waits for it, not the loop's
// other clients, and Interrupt ends the wait.
type lookup struct {
	done  chan struct{}
	addrs []netip.Addr
	err   error
}

// dial connects to addr within timeout, waiting in the loop, trying each
// of its addresses in turn as net.Dialer does (a host name that has IPv4
// and IPv6 addresses, and a server on one of them).
func (l *Loop) dial(addr string, timeout time.Duration) (*loopSocket, error) {
	deadline := time.Now().Add(timeout)
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	port, err := net.LookupPort("tcp", p)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	ips, err := l.resolve(host, deadline)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	var first error
	for _, ip := range ips {
		s, err := l.connect(netip.AddrPortFrom(ip, uint16(port)), deadline)
		if err == nil {
			return s, nil
		}
		if first == nil {
			first = err
		}
		if l.stopped.Load() || !time.Now().Before(deadline) {
			break
		}
	}
	return nil, first
}

// resolve is host's addresses: an IP address itself, a name looked up
// once a loop (a failed lookup is tried again at the next dial).
func (l *Loop) resolve(host string, deadline time.Time) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}, nil
	}
	r := l.names[host]
	if r == nil {
		r = &lookup{done: make(chan struct{})}
		l.names[host] = r
		go func() {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			r.addrs, r.err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			if r.err == nil && len(r.addrs) == 0 {
				r.err = &net.DNSError{Err: "no addresses", Name: host}
			}
			close(r.done)
		}()
	}
	for {
		select {
		case <-r.done:
			if r.err != nil && l.names[host] == r {
				delete(l.names, host)
			}
			return r.addrs, r.err
		default:
		}
		if !l.Sleep(time.Millisecond) {
			return nil, errors.New("lookup of " + host + " interrupted")
		}
	}
}

// connect dials one address, non-blocking, until deadline.
func (l *Loop) connect(ap netip.AddrPort, deadline time.Time) (*loopSocket, error) {
	ta := net.TCPAddrFromAddrPort(ap)
	opErr := func(call string, e error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: ta, Err: os.NewSyscallError(call, e)}
	}
	family, sa := syscall.AF_INET, syscall.Sockaddr(nil)
	if ap.Addr().Is4() {
		sa = &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16(), ZoneId: zoneID(ap.Addr().Zone())}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, opErr("socket", err)
	}
	syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	s := &loopSocket{l: l, fd: fd, peer: ta, rready: true, wready: true}
	if err := l.add(s); err != nil {
		syscall.Close(fd)
		return nil, opErr("epoll_ctl", err)
	}
	err = syscall.Connect(fd, sa)
	if err == syscall.EINPROGRESS {
		s.wready = false
		s.SetDeadline(deadline)
		for !s.wready && !s.expired(l.now()) && !l.stopped.Load() {
			l.wait(s, true)
		}
		if !s.wready {
			s.Close()
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: ta, Err: os.ErrDeadlineExceeded}
		}
		var v int
		if v, err = syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ERROR); err == nil && v != 0 {
			err = syscall.Errno(v)
		}
		s.SetDeadline(time.Time{})
	}
	if err != nil {
		s.Close()
		return nil, opErr("connect", err)
	}
	if la, err := syscall.Getsockname(fd); err == nil {
		s.local = sockaddrTCP(la)
	}
	return s, nil
}

// zoneID is an IPv6 zone's interface index ("lo", or a number).
func zoneID(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	var n uint32
	for _, c := range zone {
		if c < '0' || c > '9' {
			return 0
		}
		n = 10*n + uint32(c-'0')
	}
	return n
}

func sockaddrTCP(sa syscall.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]).To16(), Port: a.Port}
	case *syscall.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	}
	return nil
}
