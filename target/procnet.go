package target

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A target on this machine is found by its socket: the listening socket of
// its port in /proc/net/tcp and tcp6 gives an inode, and the process that
// holds a descriptor of that inode is the target. Its CPU, RSS, threads and
// open files are then sampled as a child's are.

// Listener is the process found listening for a target's address.
type Listener struct {
	PID   int
	Bound string // the socket's local address: 127.0.0.2:8080, 0.0.0.0:8080, [::]:8080
	// Why is set when more than one socket could take the target's
	// connections: which was chosen, and why.
	Why string
}

// ErrOwnProcess is FindListener's error for a server in probe's own
// process (a test's): its CPU is probe's.
var ErrOwnProcess = errors.New("a server in probe's process")

// FindListener finds the process whose listening socket takes the
// connections to addr: one bound to addr's own address, else a wildcard
// one (0.0.0.0 for an IPv4 address, :: for any) on its port — the kernel's
// own choice, so two servers on one port at 127.0.0.1 and 127.0.0.2 are
// told apart.
func FindListener(addr string) (Listener, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return Listener{}, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return Listener{}, fmt.Errorf("port %q", portText)
	}
	if !localHost(host) {
		return Listener{}, fmt.Errorf("%s is not an address of this machine", host)
	}
	want := targetIPs(host)
	// The kernel gives a connection to the socket bound to its address,
	// else to a wildcard one of its family (0.0.0.0 for IPv4; both that and
	// :: listening means :: is IPv6-only), else to a dual-stack ::.
	var exact, sameFamily, dualStack []socketEntry
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, s := range localSockets(f, port, "0A") {
			switch {
			case slices.ContainsFunc(want, s.ip.Equal):
				exact = append(exact, s)
			case !s.ip.IsUnspecified():
			case s.ip.To4() != nil && slices.ContainsFunc(want, isIPv4):
				sameFamily = append(sameFamily, s)
			case s.ip.To4() == nil && slices.ContainsFunc(want, isIPv4):
				dualStack = append(dualStack, s)
			case s.ip.To4() == nil:
				sameFamily = append(sameFamily, s)
			}
		}
	}
	all := slices.Concat(exact, sameFamily, dualStack)
	if len(all) == 0 {
		return Listener{}, fmt.Errorf("no socket of this machine listens on %s", net.JoinHostPort(host, portText))
	}
	chosen := exact
	why := "the kernel gives its connections to a socket bound to that address before a wildcard one"
	if len(chosen) == 0 {
		chosen, why = sameFamily, "no socket is bound to that address itself, and a wildcard one takes its connections"
	}
	if len(chosen) == 0 {
		chosen, why = dualStack, "no socket is bound to that address itself, and the dual-stack :: one takes its connections"
	}
	owners, denied := socketOwners()
	for _, s := range chosen {
		pid, ok := owners[s.inode]
		if !ok {
			continue
		}
		if pid == os.Getpid() {
			return Listener{}, fmt.Errorf("the socket listening on %s is probe's own (%w)", s.addr(port), ErrOwnProcess)
		}
		l := Listener{PID: pid, Bound: s.addr(port)}
		var others []string
		shared := false
		for _, o := range all {
			if o.inode == s.inode {
				continue
			}
			who := "a process probe cannot see"
			if p, ok := owners[o.inode]; ok {
				who = "pid " + strconv.Itoa(p)
			}
			others = append(others, o.addr(port)+" ("+who+")")
			shared = shared || slices.ContainsFunc(chosen, func(c socketEntry) bool { return c.inode == o.inode })
		}
		if shared {
			why = "more than one socket takes those connections (SO_REUSEPORT, or a name with more than one address); the " +
				"figures are of this one's process alone"
		}
		if len(others) > 0 {
			l.Why = fmt.Sprintf("the target %s is taken as pid %d, listening on %s: %s; also on port %d: %s",
				addr, pid, l.Bound, why, port, strings.Join(others, ", "))
		}
		return l, nil
	}
	if denied {
		return Listener{}, fmt.Errorf("the process listening on %s is not one probe may look into (run probe as its user)", chosen[0].addr(port))
	}
	return Listener{}, fmt.Errorf("no process holds the socket listening on %s (another network namespace, a container?)",
		chosen[0].addr(port))
}

func isIPv4(ip net.IP) bool { return ip.To4() != nil }

// targetIPs are the addresses a client dialing host reaches: its own, a
// name's, and for no host or an unspecified one the loopback (where the
// kernel sends a connection to 0.0.0.0).
func targetIPs(host string) []net.IP {
	if host == "" || host == "localhost" {
		return []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	ip := net.ParseIP(host)
	if ip == nil {
		addrs, _ := net.LookupIP(host)
		return addrs
	}
	if ip.IsUnspecified() {
		if ip.To4() != nil {
			return []net.IP{net.IPv4(127, 0, 0, 1)}
		}
		return []net.IP{net.IPv6loopback}
	}
	return []net.IP{ip}
}

// socketOwners maps socket inodes to the process holding each (the
// lowest pid: a server's master before the workers it forked), and says
// whether some process could not be looked into.
func socketOwners() (map[string]int, bool) {
	owners := map[string]int{}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return owners, false
	}
	denied := false
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			denied = denied || os.IsPermission(err)
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(target, "socket:[") {
				continue
			}
			ino := strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")
			if old, ok := owners[ino]; !ok || pid < old {
				owners[ino] = pid
			}
		}
	}
	return owners, denied
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

// socketEntry is one row of /proc/net/tcp{,6}.
type socketEntry struct {
	ip    net.IP // the local address
	inode string
}

func (s socketEntry) addr(port int) string {
	return net.JoinHostPort(s.ip.String(), strconv.Itoa(port))
}

// localSockets reads a /proc/net/tcp table for the sockets in state (0A:
// listening, 01: established) whose local port is port.
func localSockets(file string, port int, state string) []socketEntry {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []socketEntry
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != state {
			continue
		}
		hexIP, hexPort, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		b, err := hex.DecodeString(hexPort)
		if err != nil || len(b) != 2 || int(b[0])<<8|int(b[1]) != port {
			continue
		}
		ip := procIP(hexIP)
		if ip == nil {
			continue
		}
		out = append(out, socketEntry{ip: ip, inode: fs[9]})
	}
	return out
}

// procIP decodes an address of /proc/net/tcp{,6}: the kernel prints the
// address's 32-bit words each as a number in host byte order.
func procIP(h string) net.IP {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 4 && len(b) != 16 {
		return nil
	}
	ip := make(net.IP, len(b))
	for i := 0; i < len(b); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(b[i:]))
	}
	return ip
}

// Connections counts the established TCP connections whose local end
// is addr (its address and port): the target's side of its connections,
// not those of another server on the same port at another address.
func Connections(addr string) int {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	port, _ := strconv.Atoi(p)
	want := targetIPs(host)
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, s := range localSockets(f, port, "01") {
			if slices.ContainsFunc(want, s.ip.Equal) {
				n++
			}
		}
	}
	return n
}
