#!/usr/bin/env bash
# What --profile costs the target, part by part: the same microload against
# one load-time fixture, the fixture pinned to CPU 0 and probe to CPU 1,
# settings taking turns in each round:
#   off      no profiling
#   cpu      no --profile, while CPU windows are pulled back to back from
#            /debug/pprof/profile as --profile does (the CPU profiler alone)
#   default  --profile (CPU windows, the allocation delta's two heap?gc=1
#            snapshots, one goroutine profile at the end)
#   wall     --profile --wall (fgprof's wall-clock profile as well)
# Each setting's figures are the target's throughput and its CPU per ok
# reply over the measured part (probe finds the local target's process). Prints a Markdown table and puts it
# into docs/BENCHMARKS.md between the profiling markers.
# Usage: bench/profiling.sh [rounds] [seconds] [microload]
. "$(dirname "$0")/lib.sh"
rounds=${1:-5}
secs=${2:-10}
load=${3:-page}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/probe" ./cmd/probe
taskset -c 0 "$tmp/probe" fixture serve --addr 127.0.0.1:0 --mode load-time > "$tmp/fixture.out" 2> /dev/null &
for _ in $(seq 600); do grep -q listening "$tmp/fixture.out" 2>/dev/null && break; sleep 0.5; done
url=$(sed -n 's/listening on //p' "$tmp/fixture.out")
field() { sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p" "$1" | head -1; }

# run SETTING: one leg; appends "rps us_per_ok" to $tmp/SETTING.
run() {
  local setting=$1 args=() puller=""
  case $setting in
    default) args=(--profile --experiment=false) ;;
    wall) args=(--profile --wall --experiment=false) ;;
    cpu)
      ( while :; do curl -s -o /dev/null "$url/debug/pprof/profile?seconds=5" || break; done ) &
      puller=$!
      ;;
  esac
  taskset -c 1 "$tmp/probe" "$load" --target "$url" --duration "${secs}s" --warmup 2s --concurrency 32 \
    "${args[@]}" --json --out "$tmp/out-$setting-$round" > "$tmp/$setting.json" 2> "$tmp/$setting.err" || true
  if [ -n "$puller" ]; then kill "$puller" 2>/dev/null || true; wait "$puller" 2>/dev/null || true; fi
  local rps ok
  rps=$(field "$tmp/$setting.json" rps)
  if [ -z "$rps" ]; then
    echo "profiling.sh: the $setting leg wrote no report; left out: $(tail -1 "$tmp/$setting.err")" >&2
    return
  fi
  rps=$(printf '%.0f' "$rps")
  ok=$(( $(field "$tmp/$setting.json" requests) - $(field "$tmp/$setting.json" errors) ))
  # The target's CPU over the measured part (report.json's
  # target_process.cpu_s, from its /proc/PID/stat) per ok reply.
  local tcpu
  tcpu=$(sed -n '/"target_process"/,/}/s/.*"cpu_s": \([0-9.]*\).*/\1/p' "$tmp/$setting.json" | head -1)
  echo "$rps $(awk -v c="$tcpu" -v n="$ok" 'BEGIN { printf "%.2f", 1e6 * c / n }')" >> "$tmp/$setting"
}

settings="off cpu default wall"
for round in $(seq "$rounds"); do
  r=$round
  # Rotate the order each round so no setting always follows another.
  set -- $settings
  for _ in $(seq $(( (r - 1) % 4 ))); do set -- "${@:2}" "$1"; done
  for s in "$@"; do run "$s"; done
done
m_rps_off=$(cut -d' ' -f1 "$tmp/off" | median)
m_cpu_off=$(cut -d' ' -f2 "$tmp/off" | median)
table=$(
  echo "| \`probe $load\`, load-time fixture on CPU 0, probe on CPU 1 | req/s (median of $rounds) | vs off | target CPU µs per ok reply (median) | vs off |"
  echo "|---|---:|---:|---:|---:|"
  for s in $settings; do
    m_rps=$(cut -d' ' -f1 "$tmp/$s" | median)
    m_cpu=$(cut -d' ' -f2 "$tmp/$s" | median)
    echo "| $s | $m_rps | $(awk -v a="$m_rps" -v b="$m_rps_off" 'BEGIN { printf "%+.1f%%", 100*(a/b-1) }') | $m_cpu | $(awk -v a="$m_cpu" -v b="$m_cpu_off" 'BEGIN { printf "%+.1f%%", 100*(a/b-1) }') |"
  done
  echo
  echo "Each leg: ${secs} s measured after a 2 s warm-up, 32 connections; the settings take turns, their order rotating by round. Runs (req/s, µs):"
  for s in $settings; do echo "- $s: $(tr '\n' ';' < "$tmp/$s" | sed 's/;$//; s/;/; /g')"; done
)
echo "$table"
put_table profiling "$table"
