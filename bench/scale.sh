#!/usr/bin/env bash
# How load, a change and a request grow with the data (issue 15): probe
# scale on the fixture in both modes at 500–4000 realistic notes, then
# seed 002's trap: 10,000 realistic notes against 10,000 synthetic ones
# (per-request mode, one change each). Then reads during writes in both
# modes. Prints each report's growth sentences and table.
# Usage: bench/scale.sh [seconds-per-microload]   (default 5)
. "$(dirname "$0")/lib.sh"
secs=${1:-5}
out=$(mktemp -d)
go build -o "$out/probe" ./cmd/probe
show() { # a report folder: the table and what it says
  sed '/^## Findings/,$d' "$1/report.md"
}
for mode in per-request load-time; do
  echo "### probe scale page sitemap --notes 500,1000,2000,4000 --fixture-mode $mode --duration ${secs}s --changes 5"
  "$out/probe" scale page sitemap --notes 500,1000,2000,4000 --fixture-mode $mode --duration ${secs}s --changes 5 \
    --out "$out/scale-$mode" 2>/dev/null >/dev/null || echo "(exit $?)"
  show "$out/scale-$mode"
done
for kind in realistic synthetic; do
  flag=""; [ $kind = synthetic ] && flag=--synthetic
  echo "### probe scale page --notes 5000,10000 --changes 1 $flag (per-request)"
  "$out/probe" scale page --notes 5000,10000 --changes 1 $flag --duration ${secs}s \
    --out "$out/trap-$kind" 2>/dev/null >/dev/null || echo "(exit $?)"
  show "$out/trap-$kind"
done
for mode in per-request load-time; do
  echo "### probe page --notes 500 --rate 50 --concurrency 256 --during-writes 0.1/s --duration 30s --fixture-mode $mode"
  "$out/probe" page --notes 500 --rate 50 --concurrency 256 --during-writes 0.1/s --duration 30s --fixture-mode $mode \
    --out "$out/writes-$mode" 2>/dev/null >/dev/null || echo "(exit $?)"
  sed -n '/^## Reads during writes/,/^## CPU windows/p' "$out/writes-$mode/report.md" | head -60
done
echo "report folders: $out"
