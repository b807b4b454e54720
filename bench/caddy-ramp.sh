#!/usr/bin/env bash
# probe ramp on Caddy, a server nobody here wrote (issue 16): Caddy v2.11.9
# (bench/caddy-scale/Caddyfile: templates, encode gzip, file_server, pprof
# on its admin API) serving a vault of 900 small notes whose sitemap is a
# template that lists the folders on every request. The scenario
# (bench/caddy-scale/ramp.json) reads robots.txt, takes the sitemap's URL
# from it, then the first note's URL from the sitemap, and opens the note.
# Usage: bench/caddy-ramp.sh [RAMP]   (default 10:400/60s)
. "$(dirname "$0")/lib.sh"
ramp=${1:-10:400/60s}
out=$(mktemp -d)
caddy=${PROBE_CADDY:-/tmp/probe-caddy-v2.11.9/caddy}
if [ ! -x "$caddy" ]; then
  GOBIN=$(dirname "$caddy") go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9
fi
go build -o "$out/probe" ./cmd/probe
export VAULT=$out/vault PORT=18095 ADMIN_PORT=18096
for d in notes garden journal; do
  mkdir -p "$VAULT/$d"
  for i in $(seq 1 300); do
    printf -- '---\ntitle: %s %d\n---\n# %s %d\n\nA note about %s, number %d.\n' "$d" "$i" "$d" "$i" "$d" "$i" > "$VAULT/$d/n$i.md"
  done
done
cp bench/caddy-scale/robots.txt bench/caddy-scale/sitemap.txt "$VAULT/"
"$caddy" run --config bench/caddy-scale/Caddyfile --adapter caddyfile > "$out/caddy.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/robots.txt" && break; sleep 0.2; done
echo "### probe ramp --target http://127.0.0.1:$PORT --pprof http://127.0.0.1:$ADMIN_PORT/debug/pprof/ --file bench/caddy-scale/ramp.json --ramp $ramp"
"$out/probe" ramp --target "http://127.0.0.1:$PORT" --pprof "http://127.0.0.1:$ADMIN_PORT/debug/pprof/" \
  --file bench/caddy-scale/ramp.json --ramp "$ramp" --out "$out/ramp" > /dev/null 2>&1 || echo "(exit $?)"
sed -n '/^## The knee/,/^## Windows/p;/^## Findings/,$p' "$out/ramp/report.md" | grep -v '^## Windows'
echo "report folder: $out/ramp"
