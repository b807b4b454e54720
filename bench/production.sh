#!/usr/bin/env bash
# Production profiles against a real Pyroscope or Parca, given by URL:
# how long a merged fetch takes and how large it is, the analysis of the
# last hour, and a compare of the hour before against the last hour (by
# ranges; an A/A of sorts when nothing was deployed in between, so its
# significant rows are worth reading). Without a URL it says how to run
# and exits 0: the tests serve both APIs themselves (e2e/production_test.go).
# Usage: bench/production.sh pyroscope://HOST:PORT|parca://HOST:PORT SERVICE [extra flags, e.g. --tenant T --header 'Authorization: …']
. "$(dirname "$0")/lib.sh"
if [ $# -lt 2 ]; then
  echo "usage: bench/production.sh pyroscope://HOST:PORT|parca://HOST:PORT SERVICE [flags…]" >&2
  echo "no server given: nothing measured (e2e/production_test.go tests the protocol against served APIs)"
  exit 0
fi
url=$1 service=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/probe" ./cmd/probe
for since in 15m 1h 24h; do
  start=$(date +%s.%N)
  "$tmp/probe" analyze --from "$url" --service "$service" --since "$since" --out "$tmp/a-$since" "$@" > "$tmp/a-$since.txt"
  end=$(date +%s.%N)
  size=$(stat -c %s "$tmp/a-$since/production.pb.gz")
  printf '## analyze --since %s: %.2f s, profile %d bytes (gzip)\n' "$since" "$(awk "BEGIN{print $end - $start}")" "$size"
done
echo
cat "$tmp/a-1h.txt"
echo
echo "## compare --before-range 2h/1h --after-range 1h/0s --windows 12"
start=$(date +%s.%N)
"$tmp/probe" compare --from "$url" --service "$service" --before-range 2h/1h --after-range 1h/0s --windows 12 \
  --out "$tmp/c" "$@" 2> /dev/null || true
end=$(date +%s.%N)
printf '24 fetches in %.2f s\n' "$(awk "BEGIN{print $end - $start}")"
