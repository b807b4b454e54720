# Helpers the benchmark scripts share; source it from bench/*.sh.

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
