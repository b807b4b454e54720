#!/usr/bin/env bash
# Before/after on this machine: issue 7's acceptance (the fixture's
# per-request mode against its load-time mode) and the false-alarm check
# (an A/A run: the load-time fixture against itself). Prints each table and
# the share of A/A metrics claimed significant.
# Usage: bench/ab.sh [runs] [seconds] — then copy the figures into docs/BENCHMARKS.md.
. "$(dirname "$0")/lib.sh"
runs=${1:-6}
secs=${2:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/probe" ./cmd/probe
echo "## probe ab --fixture --runs $runs --duration ${secs}s"
"$tmp/probe" ab --fixture --runs "$runs" --duration "${secs}s" --out "$tmp/ab" 2> /dev/null || true
serve="$tmp/probe fixture serve --mode load-time --addr {addr}"
echo
echo "## A/A: the load-time fixture against itself, --runs $runs --duration ${secs}s"
"$tmp/probe" ab --before "$serve" --after "$serve" sitemap toolslist search notequery \
  --runs "$runs" --duration "${secs}s" --json --out "$tmp/aa" > "$tmp/aa.json" 2> "$tmp/aa.table" || true
cat "$tmp/aa.table" | grep -v '^ab ' || true
total=$(grep -c '"significant"' "$tmp/aa.json" || true)
sig=$(grep -c '"significant": true' "$tmp/aa.json" || true)
echo
echo "A/A: $sig of $total metrics claimed significant (want at most 10%)"
