#!/usr/bin/env bash
# probe on Caddy, a server nobody here wrote: Caddy v2.11.9 built from the
# module proxy, serving a small Markdown site through its templates handler
# with `encode gzip`, and a stylesheet as a precompressed file; its admin
# API's /debug/pprof/ is the pprof URL. Runs e2e's TestCaddy with
# SECONDS a run and keeps the report folders; prints each run's findings.
# Usage: bench/caddy.sh [seconds]   (default 10)
. "$(dirname "$0")/lib.sh"
secs=${1:-10}
out=$(mktemp -d)
PROBE_CADDY_OUT="$out" PROBE_CADDY_DURATION=${secs}s go test ./e2e -run '^TestCaddy$' -count 1 -v -timeout 30m | grep -E '^(---|ok|FAIL)|caddy_test' || true
for d in "$out"/*/; do
  echo "## $(basename "$d")"
  sed -n '/^# /{p};/^[0-9]*\. \*\*/{p};/Evidence:/{p};/In the target/{p};/^## Unexplained/,/^## /{/^|/p}' "$d/report.md"
  grep -E '^\| GET|^\| operation' "$d/report.md" | head -3
  echo
done
echo "report folders: $out"
