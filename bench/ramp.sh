#!/usr/bin/env bash
# Scenarios ramped to the knee (issue 16): the fixture's built-in scenario
# (search, open a hit, run a note query) at an arrival rate rising
# linearly, three times, each on a fresh fixture; prints each run's knee
# and what grew past it, then the spread of the knees.
# Usage: bench/ramp.sh [RAMP] [MODE]   (default 4:40/3m per-request)
. "$(dirname "$0")/lib.sh"
ramp=${1:-4:40/3m}
mode=${2:-per-request}
out=$(mktemp -d)
go build -o "$out/probe" ./cmd/probe
knees=()
for i in 1 2 3; do
  echo "### run $i: probe ramp --ramp $ramp --fixture-mode $mode"
  "$out/probe" ramp --ramp "$ramp" --fixture-mode "$mode" --out "$out/run-$i" > /dev/null 2>&1 || echo "(exit $?)"
  sed -n '/^## The knee/,/^## Windows/p' "$out/run-$i/report.md" | grep '^- '
  knees+=("$(grep -o '"rate": [0-9.]*' "$out/run-$i/report.json" | head -1 | cut -d' ' -f2)")
done
echo "knees: ${knees[*]}"
printf '%s\n' "${knees[@]}" | awk '{s+=$1; v[NR]=$1} END {m=s/NR; lo=v[1]; hi=v[1]; for(i in v){if(v[i]<lo)lo=v[i]; if(v[i]>hi)hi=v[i]}; printf "mean %.1f, range %.1f to %.1f (%+.0f%% to %+.0f%% of the mean)\n", m, lo, hi, 100*(lo-m)/m, 100*(hi-m)/m}'
echo "report folders: $out"
