//go:build race

package h1

import (
	"errors"
	"syscall"
)

// Under the race detector the reads and writes are syscall.Read and
// syscall.Write: they tell the detector that what one side wrote before a
// write happened before what the other does after reading it (as
// net.Conn's do), which RawSyscall does not.
func readFD(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func writeFD(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if err != nil && !errors.As(err, &e) {
		return syscall.EIO
	}
	return e
}
