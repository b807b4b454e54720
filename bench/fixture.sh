#!/usr/bin/env bash
# Measures the reference target's hot spots, per-request mode against
# load-time mode side by side (same binary, same vault, same run), and the
# CPU shares seed 002 reports. Usage: bench/fixture.sh [count]   (default 6)
. "$(dirname "$0")/lib.sh"
count=${1:-6}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ -z "${PROBE_BENCH_INNER:-}" ]; then
  # Run the measurement, print it, and put it into docs/BENCHMARKS.md.
  PROBE_BENCH_INNER=1 "$0" "$count" | tee "$out/table.md"
  doc=docs/BENCHMARKS.md
  awk -v f="$out/table.md" '/<!-- fixture:begin -->/ { print; while ((getline l < f) > 0) print l; skip = 1; next }
    /<!-- fixture:end -->/ { skip = 0 } !skip' "$doc" > "$out/doc" && cp "$out/doc" "$doc"
  exit 0
fi

echo "\`go test -bench . -benchmem -count $count ./fixtures/site/\` ($(nproc) CPUs, $(go version | cut -d' ' -f3)), $(date -u +%Y-%m-%d):"
echo
echo '```'

go test ./fixtures/site/ -run '^$' -bench . -benchmem -count "$count" -timeout 60m > "$out/bench.txt"
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -col /mode "$out/bench.txt"
echo '```'

# Where per-request mode spends its CPU: samples under a frame, as a share of
# the samples outside the background GC workers, and of all samples. (A share
# of the handler's samples would undercount: deep stacks such as go-jsonnet's
# are truncated and lose their handler frame.)
go test -c -o "$out/site.test" ./fixtures/site/
ms_under() { # focus regexp → milliseconds of samples whose stack holds it
  go tool pprof -top -nodefraction=0 -edgefraction=0 -unit=ms -focus "$1" "$out/site.test" "$out/cpu.prof" 2>/dev/null |
    sed -n 's/.*Showing nodes accounting for \([0-9.]*\)ms.*/\1/p'
}
share() { # label, benchmark, focus regexp
  (cd "$out" && PROBE_BENCH_CPUPROFILE="$out/cpu.prof" ./site.test -test.run '^$' -test.bench "$2" -test.benchtime 3s > /dev/null)
  local all gc part
  all=$(go tool pprof -top -unit=ms "$out/site.test" "$out/cpu.prof" 2>/dev/null | sed -n 's/.*Total samples = \([0-9.]*\)ms.*/\1/p')
  gc=$(ms_under 'runtime\.gcBgMarkWorker')
  part=$(ms_under "$3")
  awk -v l="$1" -v a="$all" -v g="${gc:-0}" -v p="${part:-0}" 'BEGIN { printf "| %s | %.0f%% | %.0f%% |\n", l, 100*p/(a-g), 100*p/a }'
}
echo
echo "CPU shares in per-request mode (a 3 s profile of the requests alone):"
echo
echo "| work | share of CPU outside background GC | share of all CPU |"
echo "|---|---:|---:|"
share "sitemap.xml: compress/flate" 'SitemapGzip/mode=per-request' 'compress/flate'
share "tools/list: building the MCP server (schemas parsed and resolved)" 'ToolsList/mode=per-request' 'buildMCPServer'
share "tools/list: checking the reply (parsed twice)" 'ToolsList/mode=per-request' 'checkMCPReply'
share "note query: serialising the notes (json.Marshal)" 'NoteQuery/mode=per-request' 'encoding/json\.Marshal'
share "note query: go-jsonnet" 'NoteQuery/mode=per-request' 'go-jsonnet'
share "search: bleve's highlighter and documents loaded again" 'Search/mode=per-request' 'highlight|\.Document$|segmentsFromMarks'
share "page: walking every note for the feeds" 'Page/mode=per-request' 'walkFeeds'
share "page: site settings read from SQLite" 'Page/mode=per-request' 'settingsStore'
