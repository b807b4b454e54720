#!/usr/bin/env bash
# Long gRPC server streams held open, probe grpc against ghz side by side
# (issue 39, goal 3): bench/protoserver's StreamingOutputCall (grpc-go's
# interop TestService) pinned to CPU 0 sends each call 50 messages of 16
# bytes, one every 100 ms (a 5 s stream); each generator, pinned to CPU 1,
# holds STREAMS of them open at once (closed loop, 100 streams a
# connection), three calls a stream in turn (ghz -n, probe a duration of
# 10.5 s: its last calls finish), runs interleaved. Cost per message is the
# whole process's user + system time from start to exit over the messages
# of its calls (probe counts them; ghz's are its OK calls × 50); the peak
# RSS over the streams held is the memory a stream.
# Usage: bench/streams.sh [rounds]   (default 3)
#   STREAMS=N (default 1000)
. "$(dirname "$0")/lib.sh"
rounds=${1:-3}
streams=${STREAMS:-1000}
conns=$(((streams + 99) / 100))
msgs=50
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

GOBIN="$tmp" go install github.com/bojand/ghz/cmd/ghz@v0.93.0
go build -o "$tmp/probe" ./cmd/probe
go build -o "$tmp/server" ./bench/protoserver
taskset -c 0 "$tmp/server" > "$tmp/server.out" &
for _ in $(seq 50); do grep -q grpc "$tmp/server.out" 2>/dev/null && break; sleep 0.1; done
grpc=$(sed -n 's/grpc on //p' "$tmp/server.out")
call=grpc.testing.TestService/StreamingOutputCall
data=$(awk -v n=$msgs 'BEGIN { printf "{\"responseParameters\":["; for (i = 0; i < n; i++) printf "%s{\"size\":16,\"intervalUs\":100000}", (i ? "," : ""); printf "]}" }')

# timed OUT CMD…: runs CMD pinned to CPU 1; OUT gets "cpu_seconds peak_kib".
timed() {
  local out=$1
  shift
  /usr/bin/time -f '%U %S %M' -o "$out.time" taskset -c 1 "$@" > "$out.stdout" 2> "$out.stderr" || true
  awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$out.time" > "$out"
}

declare -A cost rss counted
for round in $(seq "$rounds"); do
  timed "$tmp/ghz-$round" "$tmp/ghz" --insecure --call $call -d "$data" -c "$streams" --connections "$conns" \
    -n $((streams * 3)) "$grpc"
  ok=$(awk '/\[OK\]/ { print $2; exit }' "$tmp/ghz-$round.stdout")
  read -r c k < "$tmp/ghz-$round"
  cost[ghz]+="$(awk -v c="$c" -v n="$ok" -v m=$msgs 'BEGIN { printf "%.2f", 1e6*c/(n*m) }') "
  counted[ghz]+="$((ok * msgs)) "
  echo "streams.sh: round $round, ghz: $(grep -E '^\s*\[' "$tmp/ghz-$round.stdout" | tr -s ' \n' ' ')" >&2
  rss[ghz]+="$((k / streams)) "
  timed "$tmp/probe-$round" "$tmp/probe" grpc --target "http://$grpc" --call $call --data "$data" \
    --concurrency "$streams" --streams 100 --duration 10.5s --warmup 0s --out "$tmp/probe-out-$round"
  n=$(jq '.stream.messages.total' "$tmp/probe-out-$round/report.json")
  e=$(jq "[.operations[].errors] | add" "$tmp/probe-out-$round/report.json")
  [ "$e" = 0 ] || echo "streams.sh: probe had $e errors in round $round" >&2
  read -r c k < "$tmp/probe-$round"
  cost[probe]+="$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", 1e6*c/n }') "
  counted[probe]+="$n "
  rss[probe]+="$((k / streams)) "
done

table=$(
  echo "| generator | streams held | CPU µs per message (median of $rounds) | peak RSS KiB per stream (median) | runs (µs) | messages counted |"
  echo "|---|---:|---:|---:|---|---|"
  for g in ghz probe; do
    echo "| $g | $streams | $(echo "${cost[$g]}" | median) | $(echo "${rss[$g]}" | median) | ${cost[$g]}| ${counted[$g]}|"
  done
)
echo "$table"
put_table streams "$table"
