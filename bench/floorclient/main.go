// Command floorclient is the least a Go closed-loop HTTP/1.1 client can do
// over the netpoller: a goroutine per connection writing one fixed GET and
// reading its reply through net.Conn, nothing measured, checked or kept.
// bench/loadgen.sh runs it beside wrk and probe: what probe costs above it
// is probe's own; what it costs above wrk is Go's runtime.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	conns := flag.Int("c", 32, "connections, one goroutine each")
	dur := flag.Duration("d", 10*time.Second, "how long")
	epoll := flag.Bool("epoll", false, "one goroutine over its own epoll (wrk's design) instead of one a connection")
	flag.Parse()
	u, err := url.Parse(flag.Arg(0))
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "usage: floorclient [-c N] [-d DURATION] http://HOST:PORT/")
		os.Exit(2)
	}
	// probe's request, as bench/loadgen.sh has every generator send.
	req := []byte("GET / HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: probe/1 (load test)\r\nAccept-Encoding: gzip\r\n\r\n")
	end := time.Now().Add(*dur)
	if *epoll {
		n, err := runEpoll(u.Host, *conns, req, end)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("requests %d\n", n)
		return
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return
			}
			defer c.Close()
			buf := make([]byte, 16<<10)
			for time.Now().Before(end) {
				if _, err := c.Write(req); err != nil {
					return
				}
				if !readReply(c, buf) {
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("requests %d\n", n.Load())
}

// readReply reads one reply with a Content-Length body (the trivial
// server's) into buf.
func readReply(c net.Conn, buf []byte) bool {
	have := 0
	for {
		m, err := c.Read(buf[have:])
		if err != nil {
			return false
		}
		have += m
		head := bytes.Index(buf[:have], []byte("\r\n\r\n"))
		if head < 0 {
			continue
		}
		i := bytes.Index(buf[:head], []byte("Content-Length: "))
		if i < 0 {
			return false
		}
		j := bytes.IndexByte(buf[i:head+2], '\r')
		size, err := strconv.Atoi(string(buf[i+16 : i+j]))
		if err != nil {
			return false
		}
		if have >= head+4+size {
			return true
		}
	}
}
