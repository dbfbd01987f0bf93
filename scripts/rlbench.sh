#!/usr/bin/env bash
# Builds rlbench and runs it with the given flags. With no --addr, rlbench
# starts its own private redis-server on a free loopback port; this script
# installs redis-server first when it is missing (root with apt-get).
#
#   scripts/rlbench.sh --strategy naive,multi-nx,lua --client all --clients 200 --keys 10 --window 1 --duration 10s
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-redis.sh
ensure_redis_server
mkdir -p bin
go build -o bin/rlbench ./cmd/rlbench
exec bin/rlbench "$@"
