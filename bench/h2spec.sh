#!/usr/bin/env bash
# h2spec's client conformance cases (v2.2.1, 57 cases: frames, streams,
# settings, flow control, CONTINUATION, GOAWAY) against probe's HTTP/2
# client (lib/h2): h2spec serves each case on a port of its own and runs
# bench/h2client, a GET with lib/h2, for each. h2spec's command line has
# no client mode in that release, so a small program in a module of its
# own calls h2spec.RunClientSpec. Prints h2spec's summary; exits 1 on a
# failed case. Over h2c (h2spec's TLS needs a certificate of its own).
# Usage: bench/h2spec.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/h2client" ./bench/h2client
mkdir "$tmp/run"
cat > "$tmp/run/main.go" << 'GO'
package main

import (
	"os"

	"github.com/summerwind/h2spec"
	"github.com/summerwind/h2spec/config"
)

func main() {
	c := &config.Config{Host: "127.0.0.1", FromPort: 18400, Timeout: 3e9, MaxHeaderLen: 4000, Exec: os.Args[1]}
	if err := h2spec.RunClientSpec(c); err != nil {
		panic(err)
	}
}
GO
printf 'module h2specrun\n\ngo 1.24\n' > "$tmp/run/go.mod"
(cd "$tmp/run" && go get github.com/summerwind/h2spec@v2.2.1+incompatible > /dev/null 2>&1 && go mod tidy > /dev/null 2>&1 &&
  go build -o "$tmp/h2spec-client" .)
"$tmp/h2spec-client" "$tmp/h2client" 2>&1 | grep -v 'use of closed network connection' > "$tmp/out" || true
sed -n '/^Failures/,$p' "$tmp/out"
summary=$(grep 'tests,' "$tmp/out")
echo "$summary"
case "$summary" in *" 0 failed"*) ;; *) exit 1 ;; esac
