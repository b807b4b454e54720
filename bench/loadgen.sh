#!/usr/bin/env bash
# probe's closed loop against wrk and vegeta, side by side: the same trivial
# loopback server (100-byte reply) pinned to CPU 0, each generator pinned to
# CPU 1, 32 connections, runs interleaved; beside them go-floor
# (bench/floorclient: a bare Go client over net.Conn, the runtime's cost
# without probe's) and go-epoll (the same over its own epoll, wrk's
# design: Go without its netpoller and scheduler in the request path).
# Prints a Markdown table and puts it into docs/BENCHMARKS.md between the
# loadgen markers.
# Usage: bench/loadgen.sh [rounds] [seconds]   (default 3 rounds of 10 s)
#   VEGETA=0: leave vegeta out (no install from the module proxy).
#   PROTOCOLS=0: leave out HTTP/2 against h2load and gRPC against ghz (bench/protocols.sh).
#   PROBE_BEFORE=BINARY: also an earlier probe build, in the same rounds
#   ("probe-before"), for a before/after on the same busy machine.
. "$(dirname "$0")/lib.sh"
rounds=${1:-3}
secs=${2:-10}
conns=32
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

command -v wrk > /dev/null || { apt-get update -qq && apt-get install -y -qq wrk > /dev/null; }
vegeta=${VEGETA:-1}
[ "$vegeta" = 0 ] || GOBIN="$tmp" go install github.com/tsenart/vegeta/v12@v12.13.0
gens="wrk"
[ "$vegeta" = 0 ] || gens+=" vegeta"
[ -z "${PROBE_BEFORE:-}" ] || { cp "$PROBE_BEFORE" "$tmp/probe-before"; gens+=" probe-before"; }
gens+=" go-floor go-epoll probe"
go build -o "$tmp/probe" ./cmd/probe
go build -o "$tmp/go-floor" ./bench/floorclient
go build -o "$tmp/server" ./bench/trivialserver

taskset -c 0 "$tmp/server" > "$tmp/server.out" &
for _ in $(seq 50); do grep -q listening "$tmp/server.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/listening on //p' "$tmp/server.out")

# cpu_of CMD…: runs CMD pinned to CPU 1 and prints its user+system seconds.
cpu_of() {
  bash -c 'taskset -c 1 "$@" > /dev/null; times' _ "$@" | tail -1 |
    awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.3f\n", u[1]*60 + u[2] + s[1]*60 + s[2] }'
}

# Every generator sends the same request, probe's: Host, User-Agent and
# Accept-Encoding: gzip (vegeta's Go client adds that itself). A bare GET
# costs the server less, and a server-bound run's throughput with it.
ua='User-Agent: probe/1 (load test)'
declare -A rps cpu
for r in $(seq "$rounds"); do
  # wrk
  c=$(cpu_of sh -c "wrk -t1 -c$conns -d${secs}s -H '$ua' -H 'Accept-Encoding: gzip' $url > $tmp/wrk.txt")
  n=$(awk '/requests in/ { print $1 }' "$tmp/wrk.txt")
  rps[wrk]+="$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n/s }') "; cpu[wrk]+="$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", 1e6*c/n }') "
  # vegeta: as fast as it can with 32 workers over kept-alive connections
  [ "$vegeta" = 0 ] || {
  c=$(cpu_of sh -c "echo 'GET $url/' | $tmp/vegeta attack -header '$ua' -rate=0 -max-workers=$conns -workers=$conns -connections=$conns -duration=${secs}s | $tmp/vegeta report -type=json > $tmp/vegeta.json")
  n=$(sed -n 's/.*"requests":\([0-9]*\).*/\1/p' "$tmp/vegeta.json")
  rps[vegeta]+="$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n/s }') "; cpu[vegeta]+="$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", 1e6*c/n }') "
  }
  # the least a Go client does over net.Conn (bench/floorclient): Go's runtime without probe
  c=$(cpu_of sh -c "$tmp/go-floor -c $conns -d ${secs}s $url/ > $tmp/floor.txt")
  n=$(awk '/requests/ { print $2 }' "$tmp/floor.txt")
  rps[go-floor]+="$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n/s }') "; cpu[go-floor]+="$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", 1e6*c/n }') "
  # the same with wrk's design in Go (one goroutine over its own epoll): the runtime without its netpoller
  c=$(cpu_of sh -c "$tmp/go-floor -epoll -c $conns -d ${secs}s $url/ > $tmp/floor.txt")
  n=$(awk '/requests/ { print $2 }' "$tmp/floor.txt")
  rps[go-epoll]+="$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n/s }') "; cpu[go-epoll]+="$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", 1e6*c/n }') "
  # probe's closed loop (and the earlier build's, when given)
  for g in $gens; do
    case $g in probe | probe-before) ;; *) continue ;; esac
    taskset -c 1 "$tmp/$g" http --target "$url" --path / --concurrency $conns --duration "${secs}s" --warmup 0s --json --out "$tmp/p" --force > "$tmp/probe.json" 2> /dev/null
    rps[$g]+="$(grep -m1 -o '"rps": [0-9.]*' "$tmp/probe.json" | awk '{ printf "%.0f", $2 }') "
    cpu[$g]+="$(sed -n 's/.*"cpu_per_req_us": \([0-9.]*\).*/\1/p' "$tmp/probe.json" | awk '{ printf "%.2f", $1 }') "
  done
done

table=$(
  echo "| generator | req/s (median of $rounds) | CPU µs per request (median) | probe's throughput as a ratio | CPU per request as a ratio of wrk's |"
  echo "|---|---:|---:|---:|---:|"
  p=$(echo "${rps[probe]}" | median)
  w=$(echo "${cpu[wrk]}" | median)
  for g in $gens; do
    m=$(echo "${rps[$g]}" | median)
    c=$(echo "${cpu[$g]}" | median)
    echo "| $g | $m | $c | $(awk -v p="$p" -v m="$m" 'BEGIN { printf "%.2f×", p/m }') | $(awk -v c="$c" -v w="$w" 'BEGIN { printf "%.2f×", c/w }') |"
  done
  echo
  echo -n "Runs (req/s · CPU µs per request):"
  for g in $gens; do echo -n " $g ${rps[$g]}· ${cpu[$g]}·"; done
  echo
)
echo "$table"
put_table loadgen "$table"
# HTTP/2 and gRPC, the same way: probe against h2load and ghz.
if [ "${PROTOCOLS:-1}" != 0 ]; then
  bash bench/protocols.sh "$rounds" "$secs" # from the repository root, where this script runs
fi
