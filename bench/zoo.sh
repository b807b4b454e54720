#!/usr/bin/env bash
# The analyzers on the zoo (e2e/testdata/zoo): every labelled endpoint
# profiled by probe's pipeline for SECONDS, the findings against the labels:
# recall on the waste cases, precision (no load-time claim) on the clean
# ones, and whether an earlier run's allocations show in the next. Puts the
# table into docs/BENCHMARKS.md between the zoo markers.
# Usage: bench/zoo.sh [seconds]   (default 3)
. "$(dirname "$0")/lib.sh"
secs=${1:-3}
table=$(mktemp)
trap 'rm -f "$table"' EXIT
PROBE_ZOO_DURATION=${secs}s PROBE_ZOO_TABLE="$table" go test ./e2e -run '^TestZoo$' -count 1 -timeout 30m > /dev/null || true
[ -s "$table" ] || { echo "the zoo test wrote no table" >&2; exit 1; }
{
  echo "<!-- zoo:begin -->"
  echo "\`bench/zoo.sh $secs\` ($(date -u +%Y-%m-%d), $(nproc) CPUs, $(go version | cut -d' ' -f3)): each endpoint loaded by 4 clients for ${secs} s after a third of that of warm-up, profiled; the findings as \`name(class share)\`."
  echo
  cat "$table"
  echo "<!-- zoo:end -->"
} > "$table.md"
if grep -q '<!-- zoo:begin -->' docs/BENCHMARKS.md; then
  awk -v f="$table.md" '/<!-- zoo:begin -->/ { while ((getline l < f) > 0) print l; skip = 1; next } /<!-- zoo:end -->/ { skip = 0; next } !skip' docs/BENCHMARKS.md > "$table.new"
  mv "$table.new" docs/BENCHMARKS.md
else
  cat "$table.md" >> docs/BENCHMARKS.md
fi
rm -f "$table.md"
cat "$table"
