#!/usr/bin/env bash
# probe scale on Caddy, a server nobody here wrote (issue 15): Caddy's
# file_server with templates serves a generated vault as it is on disk; its
# sitemap (bench/caddy-scale/sitemap.txt, announced by robots.txt) is a
# template that lists the vault's folders on every request. A change is a
# file written into the vault (--write-files): Caddy reads files as it
# serves, so it shows at once. Caddy v2.11.9 is built from the module proxy
# (or reused from $PROBE_CADDY, or the cache bench/caddy.sh fills).
# Usage: bench/caddy-scale.sh [seconds-per-size]   (default 5)
. "$(dirname "$0")/lib.sh"
secs=${1:-5}
out=$(mktemp -d)
caddy=${PROBE_CADDY:-/tmp/probe-caddy-v2.11.9/caddy}
if [ ! -x "$caddy" ]; then
  GOBIN=$(dirname "$caddy") go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9
fi
go build -o "$out/probe" ./cmd/probe
files=$(pwd)/bench/caddy-scale
cmd="/bin/sh -c 'cp $files/robots.txt $files/sitemap.txt {vault}/ && exec $caddy file-server --root {vault} --listen {addr} --templates'"
echo "### probe scale sitemap --cmd \"$cmd\" --vault-gen --write-files --write-permalink /{path}.md --notes 500,1000,2000,4000"
"$out/probe" scale sitemap --cmd "$cmd" --vault-gen --write-files --write-permalink '/{path}.md' \
  --notes 500,1000,2000,4000 --duration ${secs}s --out "$out/scale" 2>&1 >/dev/null | grep -v '^scale ' || true
sed '/^## Findings/,$d' "$out/scale/report.md"
echo "report folder: $out/scale"
