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

# Where per-request mode spends its CPU: samples under a frame, as a share of
# the handler's own samples and of all samples (background GC included).
go test -c -o "$out/site.test" ./fixtures/site/
share() { # label, benchmark, handler regexp, focus regexp
  (cd "$out" && PROBE_BENCH_CPUPROFILE="$out/cpu.prof" ./site.test -test.run '^$' -test.bench "$2" -test.benchtime 3s > /dev/null)
  local all handler part
  all=$(go tool pprof -top -nodefraction=0 -edgefraction=0 -unit=ms "$out/site.test" "$out/cpu.prof" 2>/dev/null | sed -n 's/.*Total samples = \([0-9.]*\)ms.*/\1/p')
  handler=$(go tool pprof -top -nodefraction=0 -edgefraction=0 -unit=ms -focus "$3" "$out/site.test" "$out/cpu.prof" 2>/dev/null | sed -n 's/.*Showing nodes accounting for \([0-9.]*\)ms.*/\1/p')
  part=$(go tool pprof -top -nodefraction=0 -edgefraction=0 -unit=ms -focus "$4" "$out/site.test" "$out/cpu.prof" 2>/dev/null | sed -n 's/.*Showing nodes accounting for \([0-9.]*\)ms.*/\1/p')
  awk -v l="$1" -v a="$all" -v h="$handler" -v p="$part" 'BEGIN { printf "| %s | %.0f%% | %.0f%% |\n", l, 100*p/h, 100*p/a }'
}
echo
echo "## CPU shares in per-request mode (3 s profile of the requests alone)"
echo "| work | share of the handler's CPU | share of all CPU (GC included) |"
echo "|---|---:|---:|"
share "sitemap.xml: compress/flate" 'SitemapGzip/mode=per-request' 'handleSitemap' 'compress/flate'
share "tools/list: building the MCP server (NewServer, AddTool)" 'ToolsList/mode=per-request' 'mcpHandler' 'mcp\.NewServer|mcp\.AddTool|buildMCPServer'
share "tools/list: checking the reply (json.Unmarshal twice)" 'ToolsList/mode=per-request' 'mcpHandler' 'encoding/json\.Unmarshal'
share "note query: serialising the notes (json.Marshal)" 'NoteQuery/mode=per-request' 'handleStoredQuery' 'encoding/json\.Marshal'
share "note query: go-jsonnet" 'NoteQuery/mode=per-request' 'handleStoredQuery' 'go-jsonnet'
share "search: highlighting and reloading documents" 'Search/mode=per-request' 'handleSearch' 'highlight|Document'
share "page: walking every note for the feeds" 'Page/mode=per-request' 'handlePage' 'walkFeeds'
