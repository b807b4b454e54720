package probes

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A target on this machine is found by its socket: the listening socket of
// its port in /proc/net/tcp and tcp6 gives an inode, and the process that
// holds a descriptor of that inode is the target. Its CPU, RSS, threads and
// open files are then sampled as a child's are.

// ListenerPID is the process listening on addr (host:port) on this
// machine; an error says why it cannot be found: another host, no such
// listener, or a process probe may not look into.
func ListenerPID(addr string) (int, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return 0, fmt.Errorf("port %q", portText)
	}
	if !localHost(host) {
		return 0, fmt.Errorf("%s is not an address of this machine", host)
	}
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, ino := range localSockets(f, port, "0A") {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no socket of this machine listens on port %d", port)
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	denied := false
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			denied = denied || os.IsPermission(err)
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if err == nil && strings.HasPrefix(target, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] {
				return pid, nil
			}
		}
	}
	if denied {
		return 0, fmt.Errorf("the process listening on port %d is not one probe may look into (run probe as its user)", port)
	}
	return 0, fmt.Errorf("no process holds the socket listening on port %d (another network namespace, a container?)", port)
}

// localHost says whether host names this machine.
func localHost(host string) bool {
	if host == "" || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		addrs, err := net.LookupIP(host)
		if err != nil || len(addrs) == 0 {
			return false
		}
		ip = addrs[0]
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range ifaddrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// localSockets reads a /proc/net/tcp table for the sockets in state (0A:
// listening, 01: established) whose local port is port, and returns
// their inodes.
func localSockets(file string, port int, state string) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != state {
			continue
		}
		_, hexPort, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		b, err := hex.DecodeString(hexPort)
		if err != nil || len(b) != 2 || int(b[0])<<8|int(b[1]) != port {
			continue
		}
		out = append(out, fs[9])
	}
	return out
}

// countConnections counts the established TCP connections whose local end
// is addr's port: the target's side of its connections.
func countConnections(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	port, _ := strconv.Atoi(p)
	return len(localSockets("/proc/net/tcp", port, "01")) + len(localSockets("/proc/net/tcp6", port, "01"))
}
