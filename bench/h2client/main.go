// Command h2client makes one GET with probe's HTTP/2 client (lib/h2) and
// exits 0 on a whole reply, 1 otherwise: the client h2spec's client
// conformance cases drive (bench/h2spec.sh).
package main

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/probehq/probe/lib/h1"
	"github.com/probehq/probe/lib/h2"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: h2client URL")
		os.Exit(2)
	}
	u, err := url.Parse(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	p := &h2.Pool{Addr: u.Host}
	if u.Scheme == "https" {
		p.TLS = &tls.Config{InsecureSkipVerify: true} // h2spec's own certificate
	}
	c := p.Conn(2*time.Second, 1<<20, nil)
	defer c.Close()
	var resp h1.Response
	err = c.Do(h1.NewRequest("GET", u.RequestURI(), nil), &resp)
	// A run's connection outlives its replies: a case may send a bad frame
	// after a whole reply and wait for the GOAWAY, which a client that
	// exits at once would answer with a reset.
	time.Sleep(300 * time.Millisecond)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(resp.Status, len(resp.Body))
}
