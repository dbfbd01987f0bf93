#!/usr/bin/env bash
# The test command. It installs redis-server when it is missing (root with
# apt-get), and Chromium for the HTML report's test, vets the code, runs each benchmark briefly and the peer
# comparison, the scale measurement (bench-scale.sh) and the audit
# benchmark (bench-audit.sh) and the README's audit example
# (audit-example.sh) in their short modes (so that none of them
# rots; they print figures and assert no speed), then runs every test against private
# redis-servers that the tests start on free loopback ports. Extra arguments
# go to that last `go test` (e.g. -run TestAudit).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-redis.sh
ensure_redis_server
# The HTML report's test renders the page in headless Chromium.
. scripts/ensure-chromium.sh
ensure_chromium
go vet ./...
go test -count=1 -timeout 5m -run '^$' -bench . -benchtime 200x ./...
peers=$(mktemp)
trap 'rm -f "$peers"' EXIT
scripts/bench-peers.sh --short --out "$peers"
scripts/bench-scale.sh --short
scripts/bench-audit.sh --short
scripts/audit-example.sh --short >/dev/null
go test -count=1 -timeout 10m "$@" ./...
