#!/usr/bin/env bash
# probe's HTTP/2 against h2load (Debian's nghttp2-client) and probe grpc
# against ghz, side by side: bench/protoserver (100 bytes over h2c; grpc-go's
# health service with reflection) pinned to CPU 0, each generator pinned to
# CPU 1, 64 concurrent requests over 4 connections (16 streams each), runs
# interleaved. CPU per request is each process's user + system time from
# start to exit (probe's start-up and report included) over its requests.
# Prints a Markdown table and puts it into docs/BENCHMARKS.md between the
# protocols markers.
# Usage: bench/protocols.sh [rounds] [seconds]   (default 3 rounds of 10 s)
#   PROBE_BEFORE=BINARY: also an earlier probe build, in the same rounds.
. "$(dirname "$0")/lib.sh"
rounds=${1:-3}
secs=${2:-10}
clients=${CLIENTS:-64}
conns=4
streams=$((clients / conns))
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

command -v h2load > /dev/null || { apt-get update -qq && apt-get install -y -qq nghttp2-client > /dev/null; }
GOBIN="$tmp" go install github.com/bojand/ghz/cmd/ghz@v0.93.0
go build -o "$tmp/probe" ./cmd/probe
probes="probe"
[ -z "${PROBE_BEFORE:-}" ] || { cp "$PROBE_BEFORE" "$tmp/probe-before"; probes="probe-before probe"; }
go build -o "$tmp/server" ./bench/protoserver

taskset -c 0 "$tmp/server" > "$tmp/server.out" &
for _ in $(seq 50); do grep -q grpc "$tmp/server.out" 2>/dev/null && break; sleep 0.1; done
h2=$(sed -n 's/h2c on //p' "$tmp/server.out")
grpc=$(sed -n 's/grpc on //p' "$tmp/server.out")
call=grpc.health.v1.Health/Check

# cpu_of CMD…: runs CMD pinned to CPU 1 and prints its user+system seconds.
cpu_of() {
  bash -c 'taskset -c 1 "$@" > /dev/null; times' _ "$@" | tail -1 |
    awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.3f\n", u[1]*60 + u[2] + s[1]*60 + s[2] }'
}
# probe_run NAME OUT ARGS…: one probe run pinned to CPU 1, its whole
# process timed; prints "req/s cpu_us".
probe_run() {
  local bin=$1 out=$2
  shift 2
  local c
  c=$(cpu_of "$tmp/$bin" "$@" --duration "${secs}s" --warmup 0s --out "$out")
  [ -f "$out/report.json" ] || { echo "protocols.sh: $bin $1 wrote no report" >&2; echo "0 0"; return; }
  local n
  n=$(sed -n 's/.*"requests": \([0-9]*\).*/\1/p' "$out/report.json" | head -1)
  awk -v n="$n" -v s="$secs" -v c="$c" 'BEGIN { printf "%.0f %.2f\n", n/s, 1e6*c/n }'
}

declare -A rps cpu
add() { rps[$1]+="$2 "; cpu[$1]+="$3 "; }
for round in $(seq "$rounds"); do
  c=$(cpu_of sh -c "h2load -c $conns -m $streams -D $secs $h2/ > $tmp/h2load.txt")
  n=$(awk '/^requests:/ { print $8 }' "$tmp/h2load.txt")
  add h2load "$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n/s }')" "$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", 1e6*c/n }')"
  for p in $probes; do
    read -r r u < <(probe_run "$p" "$tmp/h2-$p-$round" http --http2 --streams $streams --concurrency $clients --target "$h2" \
      --path /)
    add "$p http --http2" "$r" "$u"
  done
  c=$(cpu_of sh -c "$tmp/ghz --insecure --call $call -d '{}' -c $clients --connections $conns -z ${secs}s $grpc > $tmp/ghz.txt")
  n=$(awk '/^ *Count:/ { print $2; exit }' "$tmp/ghz.txt")
  add ghz "$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n/s }')" "$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", 1e6*c/n }')"
  for p in $probes; do
    read -r r u < <(probe_run "$p" "$tmp/grpc-$p-$round" grpc --target "http://$grpc" --call $call --data '{}' \
      --streams $streams --concurrency $clients)
    add "$p grpc" "$r" "$u"
  done
done

table=$(
  echo "| generator | req/s (median of $rounds) | CPU µs per request (median) | runs (req/s) |"
  echo "|---|---:|---:|---|"
  gens=(h2load)
  for p in $probes; do gens+=("$p http --http2"); done
  gens+=(ghz)
  for p in $probes; do gens+=("$p grpc"); done
  for g in "${gens[@]}"; do
    echo "| $g | $(echo "${rps[$g]}" | median) | $(echo "${cpu[$g]}" | median) | ${rps[$g]}|"
  done
)
echo "$table"
put_table protocols "$table"
