# What the benchmark scripts share; each sources it first, as
# . "$(dirname "$0")/lib.sh": strict mode, the module's Go, the repository's
# root as the working folder, and the helpers below.

set -euo pipefail
# Go 1.27.3, as the module asks: a machine starts on its own Go.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# median: the median of the numbers on stdin (spaces or lines apart).
median() {
  tr ' ' '\n' | grep -v '^$' | sort -g |
    awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# put_table NAME TABLE: puts TABLE into docs/BENCHMARKS.md between the
# markers <!-- NAME:begin --> and <!-- NAME:end -->, when they are there.
put_table() {
  local doc=docs/BENCHMARKS.md new
  grep -q "<!-- $1:begin -->" "$doc" 2> /dev/null || return 0
  new=$(mktemp)
  awk -v b="<!-- $1:begin -->" -v e="<!-- $1:end -->" -v t="$2" \
    '$0 == b { print; print t; skip = 1; next } $0 == e { skip = 0 } !skip' "$doc" > "$new" && cp "$new" "$doc"
  rm -f "$new"
}
