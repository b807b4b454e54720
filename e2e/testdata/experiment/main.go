// Command experiment is the e2e test's server for probe's experiment:
// internal/testservers/inputs's endpoints (work keyed, or not, on the
// query, a header, a cookie identity, the user) on a loopback address,
// with /debug/pprof/.
package main

import (
	"flag"
	"log"
	"net/http"
	_ "net/http/pprof"

	"github.com/probehq/probe/internal/testservers/inputs"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (loopback)")
	flag.Parse()
	inputs.Routes(http.DefaultServeMux)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
