#!/usr/bin/env bash
# Measures rlbench against redis-benchmark on one private redis-server and the
# lua strategy's script, at matched shape (the same requests in flight: go-redis
# and redigo --clients 500 vs -c 500; rueidis and valkey-go --clients 512 vs -c
# 32 -P 16 and --clients 8000 vs -c 500 -P 16): the load generator must never be
# the bottleneck; and
# against a bare loop of the same client, pool and script with no recording
# (cmd/bareloop), which measures rlbench's own cost. Each pair prints every
# side's throughput and CPU per request, the ratios and the load average.
# Builds bin/rlbench, bin/bareloop and bin/benchpeers, then runs benchpeers
# (cmd/benchpeers), which starts the server on a free loopback port (stopped at
# the end, also on Ctrl-C), checks that redis-benchmark gets the very script
# rlbench sends, alternates rlbench, the bare loop (before rlbench in even
# runs) and redis-benchmark per target, prints each run's ratios
# rlbench/redis-benchmark and rlbench/bare loop (throughput and CPU per
# request) and their medians, and writes
# bench-peers.json.
#
#   scripts/bench-peers.sh                  # 5 runs x 10 s per side per target
#   scripts/bench-peers.sh --short          # CI: 1 run x 2 s per side
#   scripts/bench-peers.sh --runs 7 --seconds 20 --out peers.json
#   scripts/bench-peers.sh --rb-threads 2   # redis-benchmark --threads 2
#   scripts/bench-peers.sh --keys 10000000  # every side on ten million keys
#   scripts/bench-peers.sh --client valkey-go,redigo  # only these clients' targets
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
go build -o bin/bareloop ./cmd/bareloop
server=()
if [ -n "${RLBENCH_REDIS_SERVER:-}" ]; then
	server=(--redis-server "$RLBENCH_REDIS_SERVER")
fi
exec bin/benchpeers --rlbench bin/rlbench --bare-loop bin/bareloop "${server[@]}" "$@"
