#!/usr/bin/env bash
# probe against a hostile server (e2e/testdata/hostile), one
# misbehaviour per path, with the default 32 clients for 3 s each: the exit
# status, probe's peak RSS (getrusage of the probe process) and what the
# report says. Runs e2e's TestHostileTarget and prints its table.
# Usage: bench/hostile.sh
. "$(dirname "$0")/lib.sh"
PROBE_HOSTILE_TABLE=1 go test ./e2e -run '^TestHostileTarget$' -count 1 -v -timeout 10m | grep -E '^(\||---|ok|FAIL)'
