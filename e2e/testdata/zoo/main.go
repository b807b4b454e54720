// Command zoo is a server of labelled endpoints for probe's analyzers:
// each waste endpoint does one kind of per-request work that could be done
// once (with a library real Go servers use), each clean endpoint does work
// that only looks like it (decoding the request, a pure function of a
// parameter, a nonce, arithmetic, a log line) and must get no load-time
// claim. It is a module of its own, so that probe's go.mod does not carry
// thirty libraries; e2e/zoo_test.go builds it, runs probe on every
// endpoint and scores the analyzers.
//
// Usage: zoo -addr 127.0.0.1:0 [-fasthttp 127.0.0.1:0]; it prints
// "listening on URL" (and "fasthttp on URL") once it serves. /debug/pprof/
// is on the net/http port for both servers.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "net/http listen address")
	fastAddr := flag.String("fasthttp", "", "fasthttp listen address (empty: none)")
	flag.Parse()
	log.SetFlags(log.LstdFlags)
	d, err := newData()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zoo:", err)
		os.Exit(1)
	}
	mux := http.DefaultServeMux // net/http/pprof registered itself here
	for path, h := range d.waste() {
		mux.HandleFunc(path, h)
	}
	for path, h := range d.clean() {
		mux.HandleFunc(path, h)
	}
	u, err := newUnnamed(d.notes)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zoo:", err)
		os.Exit(1)
	}
	for path, h := range u.waste() {
		mux.HandleFunc(path, h)
	}
	for path, h := range u.clean() {
		mux.HandleFunc(path, h)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zoo:", err)
		os.Exit(1)
	}
	if *fastAddr != "" {
		fl, err := net.Listen("tcp", *fastAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zoo:", err)
			os.Exit(1)
		}
		go fasthttp.Serve(fl, d.fast)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr()) // the first URL printed is the server's
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, "zoo:", err)
		os.Exit(1)
	}
}
