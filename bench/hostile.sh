#!/usr/bin/env bash
# probe against a hostile server (e2e/testdata/hostile), one
# misbehaviour per path, with the default 32 clients for 3 s each: the exit
# status, probe's peak RSS (getrusage of the probe process) and what the
# report says. Runs e2e's TestHostileTarget and prints its table.
# Usage: bench/hostile.sh
set -euo pipefail
# Go 1.27.3, as the module asks: a machine starts on its own Go.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
cd "$(dirname "$0")/.."
PROBE_HOSTILE_TABLE=1 go test ./e2e -run '^TestHostileTarget$' -count 1 -v -timeout 10m | grep -E '^(\||---|ok|FAIL)'
