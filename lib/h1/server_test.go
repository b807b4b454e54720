package h1

import (
	"net"
	"testing"
)

// serveConns is a loopback server that runs handle on each connection
// it accepts, each in a goroutine of its own and closed after it, until
// the test ends. It returns the server's address.
func serveConns(tb testing.TB, handle func(c net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}
