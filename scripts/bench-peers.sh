#!/usr/bin/env bash
# Measures rlbench against redis-benchmark on one private redis-server and the
# lua strategy's script: the load generator must never be the bottleneck.
# Builds bin/rlbench and bin/benchpeers, then runs benchpeers (cmd/benchpeers),
# which starts the server on a free loopback port (stopped at the end, also on
# Ctrl-C), checks that redis-benchmark gets the very script rlbench sends,
# alternates the two tools A B A B ... per target, prints each pair's ratio
# rlbench/redis-benchmark and the median, and writes bench-peers.json.
#
#   scripts/bench-peers.sh                  # 5 pairs x 10 s per side per target
#   scripts/bench-peers.sh --short          # CI: 1 pair x 2 s per side
#   scripts/bench-peers.sh --runs 7 --seconds 20 --out peers.json
#   scripts/bench-peers.sh --rb-threads 2   # redis-benchmark --threads 2
#
# Exit status: 0 whatever the ratios (it measures, it does not judge), 1 when
# something failed to run, 2 for bad flags.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-redis.sh
ensure_redis_server
for tool in redis-benchmark redis-cli; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$tool not found on PATH. Install it first:" >&2
		echo "    sudo apt-get update && sudo apt-get install -y redis-tools" >&2
		exit 1
	fi
done
mkdir -p bin
go build -o bin/rlbench ./cmd/rlbench
go build -o bin/benchpeers ./cmd/benchpeers
server=()
if [ -n "${RLBENCH_REDIS_SERVER:-}" ]; then
	server=(--redis-server "$RLBENCH_REDIS_SERVER")
fi
exec bin/benchpeers --rlbench bin/rlbench "${server[@]}" "$@"
