package h1

import (
	"io"
	"net"
	"os"
	"syscall"
)

// rawIO reads and writes a TCP connection's non-blocking socket with
// RawSyscall through its syscall.RawConn, still parking on the netpoller
// (and keeping the deadlines) when the socket is not ready. A read or
// write of a non-blocking socket never blocks, so it need not be a
// blocking syscall to the scheduler: net.Conn's entersyscall/exitsyscall
// pair per call, and on one CPU the system monitor taking the P away
// from a loopback write that ran past 20 µs (another thread woken, two
// context switches), were a share of probe's CPU that wrk does not pay.
type rawIO struct {
	rc          syscall.RawConn
	local, peer net.Addr // for errors, as net.Conn's say them
	buf         []byte   // the read's or the write's bytes, for the callbacks
	n           int
	err         syscall.Errno
	// send is a request Read writes before it reads (see Send); sendErr
	// is that write's failure, which leaves the request unsent.
	send    []byte
	sendErr error
	// Made once: a closure passed to RawConn's methods per call would be
	// an allocation per call.
	readFn, writeFn, exchangeFn func(fd uintptr) bool
}

// newRawIO wraps nc's socket; nil when nc has none (then nc is used).
func newRawIO(nc net.Conn) *rawIO {
	rc := rawConn(nc)
	if rc == nil {
		return nil
	}
	r := &rawIO{rc: rc, local: nc.LocalAddr(), peer: nc.RemoteAddr()}
	r.readFn = func(fd uintptr) bool {
		n, e := readFD(fd, r.buf)
		if e == syscall.EAGAIN {
			return false // park until readable
		}
		if e == syscall.EINTR {
			return r.readFn(fd)
		}
		r.n, r.err = n, e
		return true
	}
	r.writeFn = func(fd uintptr) bool {
		rest, e := writeUntilBlocked(fd, r.buf)
		r.n += len(r.buf) - len(rest)
		r.buf = rest
		if e == syscall.EAGAIN {
			return false // park until writable
		}
		r.err = e
		return true
	}
	r.exchangeFn = func(fd uintptr) bool {
		var e syscall.Errno
		r.send, e = writeUntilBlocked(fd, r.send)
		switch e {
		case 0:
		case syscall.EAGAIN:
			return true // Read writes the rest on the writable edge
		default:
			r.sendErr = r.opError("write", os.NewSyscallError("write", e))
			return true
		}
		if r.send != nil {
			// Written, within the read: the readiness the read waits for
			// was reset before the write, so the reply's edge cannot have
			// come and gone; park until it comes, with no read that would
			// find nothing yet.
			r.send = nil
			return false
		}
		return r.readFn(fd)
	}
	return r
}

// rawConn is nc's socket as a syscall.RawConn; nil when it has none.
func rawConn(nc any) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// writeUntilBlocked writes p to fd until all of it is written, the
// socket's buffer is full (EAGAIN) or a write fails, writing again after
// an EINTR. It returns what is left of p (empty, not nil, once p is all
// written) and the errno that stopped it, 0 when none did.
func writeUntilBlocked(fd uintptr, p []byte) ([]byte, syscall.Errno) {
	for len(p) > 0 {
		n, e := writeFD(fd, p)
		switch e {
		case 0:
			p = p[n:]
		case syscall.EINTR:
		default:
			return p, e
		}
	}
	return p, 0
}

// Send has the next Read write req first, inside the same RawConn read:
// one read syscall a request where writing and then reading made two
// (the first finding no reply yet). The error of that write is Sent's.
func (r *rawIO) Send(req []byte) {
	r.send, r.sendErr = req, nil
}

// Sent is the error of the last Send's write: nil once it was written.
func (r *rawIO) Sent() error { return r.sendErr }

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.send != nil {
		return r.exchange(p)
	}
	return r.result(r.read(p, r.readFn))
}

// exchange writes r.send and reads the start of its reply into p.
func (r *rawIO) exchange(p []byte) (int, error) {
	rcErr := r.read(p, r.exchangeFn)
	rest := r.send // nil once written whole
	r.send = nil
	switch {
	case r.sendErr != nil:
		return 0, r.sendErr
	case rest != nil && rcErr != nil: // the deadline, or closed here, before the write
		r.sendErr = r.opError("write", rcErr)
		return 0, r.sendErr
	case rest != nil: // the socket's buffer is full: the rest when writable
		if _, err := r.Write(rest); err != nil {
			r.sendErr = err
			return 0, err
		}
		return r.Read(p)
	}
	return r.result(rcErr)
}

// read runs fn in one RawConn read into p; its error is RawConn's own.
func (r *rawIO) read(p []byte, fn func(fd uintptr) bool) error {
	r.buf, r.n, r.err = p, 0, 0
	err := r.rc.Read(fn)
	r.buf = nil
	return err
}

// result is the last read's outcome as net.Conn's Read says it.
func (r *rawIO) result(rcErr error) (int, error) {
	switch {
	case rcErr != nil: // the deadline, or the connection closed here
		return 0, r.opError("read", rcErr)
	case r.err != 0:
		return 0, r.opError("read", os.NewSyscallError("read", r.err))
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

func (r *rawIO) Write(p []byte) (int, error) {
	r.buf, r.n, r.err = p, 0, 0
	err := r.rc.Write(r.writeFn)
	r.buf = nil
	switch {
	case err != nil:
		return r.n, r.opError("write", err)
	case r.err != 0:
		return r.n, r.opError("write", os.NewSyscallError("write", r.err))
	}
	return r.n, nil
}

// opError is err as net.Conn's Read and Write say it (RawConn's own errors
// are a "raw-read" or "raw-write" OpError: their cause is kept).
func (r *rawIO) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: r.local, Addr: r.peer, Err: err}
}
