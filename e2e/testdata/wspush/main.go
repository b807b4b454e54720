// Command wspush is internal/testservers/pushhub's push server (events of
// JSON documents, for probe ws's per-delivery experiment) on loopback,
// with /debug/pprof/; it prints its URL.
//
//	-mode per-subscriber  each subscriber's writer encodes the event itself: the encode runs once per delivery
//	-mode once            the event is encoded once and the same bytes go to every subscriber
//	-mode ignore-room     as once, but every event goes to every connection, whatever its room
package main

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"

	"github.com/probehq/probe/internal/testservers/pushhub"
	"github.com/probehq/probe/internal/testservers/selfserve"
)

func main() {
	mode := flag.String("mode", pushhub.Once, "per-subscriber, once or ignore-room")
	flag.Parse()
	mux := http.NewServeMux()
	pushhub.New(*mode).Routes(mux)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	if err := selfserve.Serve(mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
