#!/usr/bin/env bash
# probe against an earlier build of itself: the same trivial loopback server
# (bench/trivialserver) pinned to CPU 0, each build's `probe http` pinned to
# CPU 1, 32 kept-alive connections, rounds interleaved (old, new, old, …).
# Prints the requests per second and probe's own CPU per request of each
# run, and the medians: a change to the code must not make the generator
# dearer. Usage: bench/selfab.sh OLD_REF [rounds] [seconds] (default 5 × 5 s)
. "$(dirname "$0")/lib.sh"
old=${1:?usage: bench/selfab.sh OLD_REF [rounds] [seconds]}
rounds=${2:-5}
secs=${3:-5}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; git worktree remove --force "$tmp/tree" 2>/dev/null || true; rm -rf "$tmp"' EXIT

git worktree add -q --detach "$tmp/tree" "$old"
(cd "$tmp/tree" && go build -o "$tmp/probe-old" ./cmd/probe)
go build -o "$tmp/probe-new" ./cmd/probe
go build -o "$tmp/server" ./bench/trivialserver

taskset -c 0 "$tmp/server" > "$tmp/server.out" &
for _ in $(seq 50); do grep -q listening "$tmp/server.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/listening on //p' "$tmp/server.out")

declare -A rps cpu
for r in $(seq "$rounds"); do
  for side in old new; do
    taskset -c 1 "$tmp/probe-$side" http --target "$url" --path / --duration "${secs}s" --warmup 1s \
      --concurrency 32 --json --out "$tmp/out-$side-$r" > "$tmp/$side-$r.json" 2> /dev/null
    rps[$side]+="$(sed -n 's/^    "rps": \([0-9.]*\),*/\1/p' "$tmp/$side-$r.json" | head -1) "
    cpu[$side]+="$(sed -n 's/^    "cpu_per_req_us": \([0-9.]*\),*/\1/p' "$tmp/$side-$r.json" | head -1) "
  done
done
echo "| build | req/s (median of $rounds) | probe's CPU µs per request (median) |"
echo "|---|---:|---:|"
for side in old new; do
  printf "| %s | %.0f | %.2f |\n" "$side" "$(echo "${rps[$side]}" | median)" "$(echo "${cpu[$side]}" | median)"
done
echo
echo "Runs: old req/s ${rps[old]}· new req/s ${rps[new]}· old µs ${cpu[old]}· new µs ${cpu[new]}"
