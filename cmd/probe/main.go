// Command probe is a profiling-first hot-path analyzer for Go servers:
// it loads one kind of request, profiles the server while it runs, and
// says which per-request work could move to load time. The command line
// is package cli; the work is in the library packages it calls.
package main

import (
	"os"

	"github.com/probehq/probe/fixtures/site"
	"github.com/probehq/probe/internal/cli"
)

func main() {
	site.RunQueryWorkerIfChild() // load-time mode guards Jsonnet in re-executed workers
	os.Exit(cli.Main(os.Args[1:]))
}
