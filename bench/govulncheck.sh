#!/usr/bin/env bash
# govulncheck against a vulnerability database built here: the web service
# (vuln.go.dev) cannot be reached from this machine, but the database's
# source, golang.org/x/vulndb, comes from the module proxy. Builds the v1
# database from its OSV files with vulndb's own cmd/indexdb, then runs
# govulncheck on probe (the fixture included) with -db file://….
# Exit status: govulncheck's (0 clean, 3 vulnerabilities reachable).
# Usage: bench/govulncheck.sh [govulncheck flags]   (e.g. -show verbose)
. "$(dirname "$0")/lib.sh"
db=${PROBE_VULNDB:-$(mktemp -d)/vulndb}
if [ ! -f "$db/index/db.json" ]; then
  src=$(go mod download -json golang.org/x/vulndb@latest | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
  echo "govulncheck: building the database from $src" >&2
  (cd "$src" && go run ./cmd/indexdb -vulns data/osv -out "$db")
fi
echo "govulncheck: database $db ($(ls "$db/ID" | wc -l) entries)" >&2
exec go run golang.org/x/vuln/cmd/govulncheck@v1.9.0 -db "file://$db" "$@" ./...
