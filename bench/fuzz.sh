#!/usr/bin/env bash
# Fuzz runs on this machine: what a restart and a stack overflow cost (the
# reasons for probe fuzz notequery's defaults), then issue 6's acceptance
# in both fixture modes. Prints Markdown; copy the figures into
# docs/BENCHMARKS.md. Usage: bench/fuzz.sh [seconds]
. "$(dirname "$0")/lib.sh"
secs=${1:-60}
tmp=$(mktemp -d)
trap 'pkill -f "$tmp/probe fixture serve" 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/probe" ./cmd/probe
go build -o "$tmp/victim" ./probes/fuzz/testdata/victim
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc | xargs printf '%.2f'; }

# start NOTES [FLAGS…]: start a per-request fixture, print seconds to listen.
start() {
  local notes=$1; shift
  : > "$tmp/out"
  local t0; t0=$(now)
  "$tmp/probe" fixture serve --addr 127.0.0.1:0 --notes "$notes" "$@" > "$tmp/out" 2> /dev/null &
  until grep -q listening "$tmp/out"; do sleep 0.01; done
  since "$t0"
}
url() { sed -n 's/listening on //p' "$tmp/out"; }
stop() { pkill -f "$tmp/probe fixture serve" || true; sleep 0.5; }
# overflow DEPTH: seconds until the link-walk request dies (or answers).
overflow() {
  local t0; t0=$(now)
  curl -s -o /dev/null "$(url)/q/link-walk?depth=$1" || true
  since "$t0"
}

echo "| fixture start (per-request mode) | seconds |"
echo "|---|---:|"
for n in 60 2000; do echo "| $n notes | $(start "$n") |"; stop; done
echo
echo "| link-walk stack overflow, 60 notes | seconds to die |"
echo "|---|---:|"
start 60 --max-stack 64MB > /dev/null; echo "| 64 MB stack (--max-stack 64MB), depth 10,000 | $(overflow 10000) |"; stop
start 60 > /dev/null; echo "| Go's 1 GB default, depth 100,000 | $(overflow 100000) |"; stop
start 60 --max-stack 64MB > /dev/null
echo
echo "64 MB stack: depth 4377 answers $(curl -s -o /dev/null -w '%{http_code}' "$(url)/q/link-walk?depth=4377"), depth 4378 answers $(curl -s -o /dev/null -w '%{http_code}' "$(url)/q/link-walk?depth=4378" || true) (000: the process died)"
stop

# inputs PATH: inputs a second that probe fuzz http sends in 10 s of search
# to the test victim.
inputs() {
  "$tmp/probe" fuzz http --cmd "$tmp/victim -addr {addr}" --path "$1" --duration 10s --shrink-time 1s --json 2> /dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["fuzz"]; print("%.0f" % (r["inputs"] / 10), "|", r["statuses"])'
}
echo
echo "| probe fuzz http, 10 s, 4 clients | inputs a second | statuses |"
echo "|---|---:|---|"
echo "| /echo?n={int} (200 every time) | $(inputs '/echo?n={int}') |"
echo "| /fail?n={int} (500 every time) | $(inputs '/fail?n={int}') |"
echo "| /item?i={int} (a panic net/http recovers when i < 0) | $(inputs '/item?i={int}') |"

for mode in per-request load-time; do
  echo
  echo "## probe fuzz notequery --fixture-mode $mode --duration ${secs}s"
  t0=$(now)
  "$tmp/probe" fuzz notequery --fixture-mode "$mode" --duration "${secs}s" --out "$tmp/$mode" > "$tmp/$mode.txt" 2> /dev/null || true
  echo "wall $(since "$t0") s"
  echo '```'
  cat "$tmp/$mode.txt"
  echo '```'
  python3 - "$tmp/$mode/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f = r["fuzz"]
print("statuses", dict(sorted(f["statuses"].items())), "restarts", f["restarts"], "inputs", f["inputs"])
for c in r["crashes"]:
    print("-", c["class"], c["endpoint"], "found after %.2f s" % c["found_after_s"], "seen", c["seen"], "|", c["shrink"][:90], "|", c["input"][:100])
for k, v in sorted(f["error_replies"].items(), key=lambda kv: -kv[1])[:4]:
    print("  ", v, k[:110])
PY
done
