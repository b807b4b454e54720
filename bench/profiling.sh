#!/usr/bin/env bash
# What --profile costs the target: throughput of the same microload with and
# without continuous profiling, runs interleaved against one fixture.
# Prints a Markdown table and puts it into docs/BENCHMARKS.md between the
# profiling markers. Usage: bench/profiling.sh [rounds] [seconds] [microload]
set -euo pipefail
# Go 1.27.3, as the module asks: a machine starts on its own Go.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-10}
load=${3:-page}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/probe" ./cmd/probe
"$tmp/probe" fixture serve --addr 127.0.0.1:0 --mode load-time > "$tmp/fixture.out" 2> /dev/null &
for _ in $(seq 300); do grep -q listening "$tmp/fixture.out" 2>/dev/null && break; sleep 0.2; done
url=$(sed -n 's/listening on //p' "$tmp/fixture.out")
rps() { sed -n 's/.*"rps": \([0-9.]*\).*/\1/p' "$1" | head -1; }
off="" on=""
for _ in $(seq "$rounds"); do
  "$tmp/probe" "$load" --target "$url" --duration "${secs}s" --warmup 2s --json --out "$tmp/off" > "$tmp/off.json" 2> /dev/null || true
  off+="$(rps "$tmp/off.json") "
  "$tmp/probe" "$load" --target "$url" --duration "${secs}s" --warmup 2s --profile --json --out "$tmp/on" > "$tmp/on.json" 2> /dev/null || true
  on+="$(rps "$tmp/on.json") "
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2 }'; }
m_off=$(echo "$off" | median); m_on=$(echo "$on" | median)
table=$(
  echo "| \`probe $load\` against the load-time fixture | req/s (median of $rounds) | runs |"
  echo "|---|---:|---|"
  echo "| without --profile | $m_off | $off|"
  echo "| with --profile (CPU windows, allocation delta, fgprof) | $m_on | $on|"
  echo
  echo "Throughput with profiling: $(awk -v a="$m_on" -v b="$m_off" 'BEGIN { printf "%.3f× (%.1f%% loss)", a/b, 100*(1-a/b) }')"
)
echo "$table"
doc=docs/BENCHMARKS.md
if grep -q '<!-- profiling:begin -->' "$doc" 2> /dev/null; then
  awk -v t="$table" '/<!-- profiling:begin -->/ { print; print t; skip = 1; next } /<!-- profiling:end -->/ { skip = 0 } !skip' "$doc" > "$tmp/doc" && cp "$tmp/doc" "$doc"
fi
