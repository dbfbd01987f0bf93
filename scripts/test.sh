#!/usr/bin/env bash
# The test command: installs redis-server when it is missing (root with
# apt-get), then vets and runs every test against private redis-servers the
# tests start on free loopback ports, runs each benchmark briefly and the
# peer comparison in its short mode, so that none of them rots. Extra arguments go to `go test` (e.g. -run TestAudit).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-redis.sh
ensure_redis_server
go vet ./...
go test -count=1 -timeout 10m "$@" ./...
go test -count=1 -timeout 5m -run '^$' -bench . -benchtime 200x ./...
# The peer comparison in its short mode (1 pair x 2 s per side), so that it
# cannot rot; it prints figures and asserts no speed.
scripts/bench-peers.sh --short --out "$(mktemp)"
