#!/usr/bin/env bash
# Measures the reference target's hot spots, per-request mode against
# load-time mode side by side (same binary, same vault, same run), and the
# CPU shares seed 002 reports. Usage: bench/fixture.sh [count]   (default 6)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-6}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "## go test -bench . -benchmem -count $count ./fixtures/site/   ($(nproc) CPUs, $(go version | cut -d' ' -f3))"
go test ./fixtures/site/ -run '^$' -bench . -benchmem -count "$count" -timeout 60m > "$out/bench.txt"
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -col /mode "$out/bench.txt"

# Where per-request mode spends its CPU: the share of samples under a frame.
go test -c -o "$out/site.test" ./fixtures/site/
share() { # benchmark, focus regexp
  (cd "$out" && PROBE_BENCH_CPUPROFILE="$out/cpu.prof" ./site.test -test.run '^$' -test.bench "$1" -test.benchtime 3s > /dev/null)
  go tool pprof -top -focus "$2" "$out/site.test" "$out/cpu.prof" 2>/dev/null |
    sed -n 's/.*Showing nodes accounting for .*, \([0-9.]*%\) of .* total.*/\1/p' | head -1
}
echo
echo "## CPU shares in per-request mode (share of the samples of a 3 s profile of the requests alone, go tool pprof -top -focus)"
echo "sitemap.xml (gzip) in compress/flate:      $(share 'SitemapGzip/mode=per-request' 'compress/flate')"
echo "tools/list building the server (NewServer|AddTool): $(share 'ToolsList/mode=per-request' 'mcp\.NewServer|mcp\.AddTool')"
echo "note query serialising notes (encoding/json.Marshal): $(share 'NoteQuery/mode=per-request' 'encoding/json\.Marshal')"
echo "note query in go-jsonnet:                   $(share 'NoteQuery/mode=per-request' 'go-jsonnet')"
echo "search in bleve's highlighter + doc loads: $(share 'Search/mode=per-request' 'highlight|Document')"
echo "page render walking every note's feeds:     $(share 'Page/mode=per-request' 'walkFeeds')"
