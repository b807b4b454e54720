package shardreport

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"

	"github.com/probehq/probe/lib/textline"
)

// A shard's folder is read as a crafted one could be: each file is opened
// without following a link (a link to /dev/zero or to a secret is
// refused, not read), must be a regular file, and is read within a cap.
const (
	maxShardJSON    = 16 << 20 // report.json
	maxShardLog     = 64 << 20 // latency.hlog, per-second.hlog
	maxShardProfile = 32 << 20 // each profile or flame graph copied (pprofio.DefaultLimit)
	maxShardCopied  = 256 << 20
)

// openInFolder opens name, a path inside dir (slash-separated, local),
// following no link on the way: dir itself as given, then each part of
// name with O_NOFOLLOW; the file must be a regular file.
func openInFolder(dir, name string) (*os.File, *unix.Stat_t, error) {
	if name == "" || !filepath.IsLocal(name) || strings.Contains(name, `\`) {
		return nil, nil, fmt.Errorf("%q is not a file of the folder", name)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	parts := strings.Split(name, "/")
	for i, part := range parts {
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		} else {
			flags |= unix.O_NONBLOCK // a FIFO opens at once, and is refused below
		}
		next, err := unix.Openat(fd, part, flags, 0)
		var st unix.Stat_t
		// A link opened with O_DIRECTORY|O_NOFOLLOW is ENOTDIR, not ELOOP.
		link := errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) &&
			unix.Fstatat(fd, part, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
		unix.Close(fd)
		if link {
			return nil, nil, fmt.Errorf("%s is a link: a shard's files are read only as regular files",
				textline.Of(strings.Join(parts[:i+1], "/"), 0))
		}
		if err != nil {
			return nil, nil, &os.PathError{Op: "open", Path: filepath.Join(dir, name), Err: err}
		}
		fd = next
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("%s is not a regular file", textline.Of(name, 0))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name)), &st, nil
}

// readInFolder is name's bytes (see openInFolder), at most max of them.
func readInFolder(dir, name string, max int64) ([]byte, error) {
	f, st, err := openInFolder(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, name, st.Size, max)
}

// copyInFolder is readInFolder of a file the merge copies as it is: one
// with no other hard link as well (a hard link to a secret is no link
// O_NOFOLLOW sees).
func copyInFolder(dir, name string, max int64) ([]byte, error) {
	f, st, err := openInFolder(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Nlink != 1 {
		return nil, fmt.Errorf("%s has %d hard links: a shard's files are copied only as files of their own", name, st.Nlink)
	}
	return readCapped(f, name, st.Size, max)
}

// readCapped reads r (of size bytes by its fstat) to its end, or fails
// past max bytes: it reads at most max+1 of them, however much r has.
func readCapped(r io.Reader, name string, size, max int64) ([]byte, error) {
	if size > max {
		return nil, fmt.Errorf("%s is over %s", textline.Of(name, 0), humanize.IBytes(uint64(max)))
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max { // it grew as it was read
		return nil, fmt.Errorf("%s is over %s", textline.Of(name, 0), humanize.IBytes(uint64(max)))
	}
	return b, nil
}
