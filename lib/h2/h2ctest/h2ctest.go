// Package h2ctest is, for tests only, a server of h2c (HTTP/2 in clear
// text, with prior knowledge) on loopback that counts its connections:
// the HTTP/2 and gRPC clients' tests load it.
package h2ctest

import (
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
)

// Server is a running h2c server.
type Server struct {
	URL   *url.URL     // http://127.0.0.1:port
	Addr  string       // 127.0.0.1:port
	Conns atomic.Int64 // the connections it accepted
}

// Serve serves h over h2c, and over HTTP/1.1 too when http1, on a port of
// 127.0.0.1 until the test ends.
func Serve(t testing.TB, h http.Handler, http1 bool) *Server {
	t.Helper()
	s := &Server{}
	var protos http.Protocols
	protos.SetHTTP1(http1)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: &protos, Handler: h, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.Conns.Add(1)
		}
	}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	s.Addr = l.Addr().String()
	s.URL = &url.URL{Scheme: "http", Host: s.Addr}
	return s
}
