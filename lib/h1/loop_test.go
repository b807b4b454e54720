//go:build linux

package h1

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/probehq/probe/lib/h1/h1test"
	"golang.org/x/net/dns/dnsmessage"
)

// runLoop runs clients in a new loop until each has returned.
func runLoop(t *testing.T, clients ...func(l *Loop)) {
	t.Helper()
	l, err := NewLoop()
	if err != nil {
		t.Skip(err)
	}
	for _, c := range clients {
		l.Go(func() { c(l) })
	}
	l.Run()
}

// Many clients in one loop each get their own replies, every one whole,
// over kept-alive connections.
func TestLoopClientsGetTheirOwnReplies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A reply of a size of its own per request, to be told apart.
		fmt.Fprintf(w, "%s %s", r.URL.Path, strings.Repeat("x", len(r.URL.Path)*37%4000))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	const clients, requests = 48, 60
	var bad, opened atomic.Int64
	var cs []func(*Loop)
	for i := range clients {
		cs = append(cs, func(l *Loop) {
			c := &Conn{Addr: addr, Timeout: 10 * time.Second, Loop: l}
			defer c.Close()
			var r Response
			for j := range requests {
				path := fmt.Sprintf("/c%d/r%d", i, j)
				err := c.Do(NewRequest("GET", path, nil), &r)
				want := path + " " + strings.Repeat("x", len(path)*37%4000)
				if err != nil || r.Status != 200 || string(r.Body) != want {
					bad.Add(1)
					t.Errorf("client %d request %d: %v, %d, %d bytes", i, j, err, r.Status, len(r.Body))
					return
				}
			}
			opened.Add(int64(c.Opened))
		})
	}
	runLoop(t, cs...)
	if bad.Load() == 0 && opened.Load() != clients {
		t.Errorf("%d connections opened for %d clients: want one each, kept alive", opened.Load(), clients)
	}
}

// silentServer accepts and reads, and never replies.
func silentServer(t *testing.T) string {
	return h1test.ServeConns(t, func(c net.Conn) { io.Copy(io.Discard, c) })
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A reply that does not come ends at the connection's deadline, as a
// timeout, and an Interrupt from another goroutine ends it at once.
func TestLoopKeepsDeadlinesAndInterrupts(t *testing.T) {
	addr := silentServer(t)
	var timedOut, interrupted error
	var took time.Duration
	c2 := &Conn{Addr: addr, Timeout: time.Hour}
	runLoop(t, func(l *Loop) {
		c := &Conn{Addr: addr, Timeout: 200 * time.Millisecond, Loop: l}
		defer c.Close()
		var r Response
		timedOut = c.Do(NewRequest("GET", "/", nil), &r)
	}, func(l *Loop) {
		c2.Loop = l
		defer c2.Close()
		go func() {
			time.Sleep(300 * time.Millisecond)
			c2.Interrupt()
		}()
		began := time.Now()
		var r Response
		interrupted = c2.Do(NewRequest("GET", "/", nil), &r)
		took = time.Since(began)
	})
	if !isTimeoutErr(timedOut) {
		t.Errorf("past its 200 ms deadline: %v, want a timeout", timedOut)
	}
	if !isTimeoutErr(interrupted) || took > time.Minute {
		t.Errorf("interrupted after 300 ms: %v after %v, want a timeout at once", interrupted, took)
	}
}

// An interrupted loop ends its clients' sleeps, and its sleeps end when due.
func TestLoopSleeps(t *testing.T) {
	var slept, cut bool
	var l0 *Loop
	runLoop(t, func(l *Loop) {
		l0 = l
		slept = l.Sleep(30 * time.Millisecond)
		go func() {
			time.Sleep(50 * time.Millisecond)
			l0.Interrupt()
		}()
		cut = !l.Sleep(time.Hour)
	})
	if !slept || !cut {
		t.Errorf("a 30 ms sleep ended as due: %v; an hour's sleep ended by Interrupt: %v", slept, cut)
	}
}

// A refused connection is a dial error, as net.Dial's: the engine backs
// off on it.
func TestLoopDialErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var got error
	runLoop(t, func(l *Loop) {
		c := &Conn{Addr: addr, Timeout: time.Second, Loop: l}
		var r Response
		got = c.Do(NewRequest("GET", "/", nil), &r)
	})
	var oe *net.OpError
	if !errors.As(got, &oe) || oe.Op != "dial" || !errors.Is(got, syscall.ECONNREFUSED) {
		t.Errorf("a closed port: %v, want a dial error of ECONNREFUSED", got)
	}
}

// Requests and replies of many megabytes go through the loop's waits for
// a writable and a readable socket whole.
func TestLoopCarriesLargeBodies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(bytes.Repeat(b[:1], 3*len(b)))
	}))
	defer srv.Close()
	body := bytes.Repeat([]byte("y"), 4<<20)
	var err error
	var r Response
	runLoop(t, func(l *Loop) {
		c := &Conn{Addr: strings.TrimPrefix(srv.URL, "http://"), Timeout: 30 * time.Second, MaxBody: 16 << 20, Loop: l}
		defer c.Close()
		err = c.Do(NewRequest("POST", "/", body), &r)
	})
	if err != nil || len(r.Body) != 3*len(body) || r.Body[len(r.Body)-1] != 'y' {
		t.Errorf("a 4 MiB request answered by 12 MiB: %v, %d bytes", err, len(r.Body))
	}
}

// A running loop holds a P of its own and raises GOMAXPROCS by one, so the
// rest of the process (here a server in it, at GOMAXPROCS=1) keeps one;
// it is put back when the loop ends.
func TestLoopLeavesTheProcessAP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	var during, base int
	var err error
	runLoop(t, func(l *Loop) {
		during, base = runtime.GOMAXPROCS(0), Procs()
		c := &Conn{Addr: strings.TrimPrefix(srv.URL, "http://"), Timeout: 10 * time.Second, Loop: l}
		defer c.Close()
		var r Response
		for range 200 {
			if err = c.Do(NewRequest("GET", "/", nil), &r); err != nil {
				return
			}
		}
	})
	if during != 2 || base != 1 || runtime.GOMAXPROCS(0) != 1 || err != nil {
		t.Errorf("GOMAXPROCS 1: %d while the loop ran (Procs %d), %d after; %v", during, base, runtime.GOMAXPROCS(0), err)
	}
}

// fakeDNS is the process's resolver for the test: A 127.0.0.1 and AAAA
// ::1 for every name, a second late for names that start with "slow".
func fakeDNS(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil || len(m.Questions) == 0 {
				continue
			}
			go func(m dnsmessage.Message) {
				q := m.Questions[0]
				if strings.HasPrefix(q.Name.String(), "slow") {
					time.Sleep(time.Second)
				}
				m.Header.Response, m.Header.Authoritative = true, true
				h := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60, Type: q.Type}
				switch q.Type {
				case dnsmessage.TypeA:
					m.Answers = []dnsmessage.Resource{{Header: h, Body: &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}}}}
				case dnsmessage.TypeAAAA:
					m.Answers = []dnsmessage.Resource{{Header: h, Body: &dnsmessage.AAAAResource{AAAA: netip.IPv6Loopback().As16()}}}
				}
				b, _ := m.Pack()
				pc.WriteTo(b, from)
			}(m)
		}
	}()
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		return net.Dial("udp", pc.LocalAddr().String())
	}}
	t.Cleanup(func() { net.DefaultResolver = old; pc.Close() })
}

// A host name with an IPv4 and an IPv6 address, its server on the IPv6
// one only ("localhost" for a server bound to ::1): each address is
// tried, as net.Dialer tries them.
func TestLoopDialsEachAddressOfAName(t *testing.T) {
	fakeDNS(t)
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skip(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(ln)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	engines(t, func(t *testing.T, e *engine) {
		c := e.conn(&Conn{Addr: "dual.test:" + port, Timeout: 2 * time.Second})
		var r Response
		if err := e.do(c, NewRequest("GET", "/", nil), &r); err != nil || r.Status != 200 {
			t.Errorf("%v, status %d", err, r.Status)
		}
		e.run(c.Close)
	})
}

// A client whose dial waits for a slow resolver holds up no other client
// of its loop.
func TestLoopGoesOnWhileANameIsLookedUp(t *testing.T) {
	fakeDNS(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	var worst time.Duration
	var slowErr error
	runLoop(t, func(l *Loop) {
		c := &Conn{Addr: strings.TrimPrefix(srv.URL, "http://"), Timeout: 5 * time.Second, Loop: l}
		defer c.Close()
		var r Response
		for range 100 {
			began := time.Now()
			if err := c.Do(NewRequest("GET", "/", nil), &r); err != nil {
				t.Error(err)
				return
			}
			l.Sleep(5 * time.Millisecond)
			worst = max(worst, time.Since(began))
		}
	}, func(l *Loop) {
		l.Sleep(20 * time.Millisecond)
		c := &Conn{Addr: "slow.test:" + port, Timeout: 5 * time.Second, Loop: l}
		defer c.Close()
		var r Response
		slowErr = c.Do(NewRequest("GET", "/", nil), &r)
	})
	if worst > 500*time.Millisecond || slowErr != nil {
		t.Errorf("a request took %v while another client's name (a second to look up) was looked up; that client: %v", worst, slowErr)
	}
}
