#!/usr/bin/env bash
# The tests of `rlbench compare` and `rlbench report`: installs redis-server
# and chromium when they are missing (root with apt-get), then runs the tests
# of the packages behind them, the report page in headless Chromium included.
# With CI set, a missing Chromium fails the tests rather than skipping them.
# RLBENCH_REPORT_SCREENSHOT=FILE.png saves a screenshot of the page drawn
# from real runs. Extra arguments go to `go test` (e.g. -v, or -update to
# rewrite the golden files).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-redis.sh
. scripts/ensure-chromium.sh
ensure_redis_server
ensure_chromium
go test -count=1 -timeout 5m "$@" ./results/ ./compare/ ./htmlreport/ ./internal/chromiumtest/
go test -count=1 -timeout 5m -run 'Compare|Report' "$@" ./cmd/rlbench/
