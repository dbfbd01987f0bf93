#!/usr/bin/env bash
# Compares Redis (or Valkey) server binaries and both clients on the same
# workload, in one rlbench run: rlbench starts each binary in turn as a
# private server and runs every strategy x client cell on it. It prints the
# cells grouped by strategy (one group of columns per server), and writes the
# JSON and a self-contained HTML report.
#
#   scripts/compare-versions.sh [--out DIR] [LABEL=]SERVER_BINARY... [-- RLBENCH_FLAGS...]
#
#   scripts/compare-versions.sh 7.0=/usr/bin/redis-server 7.2=/opt/redis-7.2/bin/redis-server
#   scripts/compare-versions.sh /usr/bin/redis-server valkey=/usr/bin/valkey-server -- --strategy lua --clients 500 --duration 30s
#
# Defaults: --strategy naive,multi-nx,lua --client all --clients 100
# --duration 10s, each used unless the flags after -- give it. Writes
# DIR/compare.json and DIR/report.html (DIR defaults to ./compare-out, in
# the directory the script is called from).
# To tell noise from a difference, run it several times and give the JSON
# files to `rlbench compare`, which shows each cell's spread.
set -euo pipefail
out=compare-out
servers=()
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out="$2"; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n "2,20p" "$0"; exit 0 ;;
	*) servers+=("$1"); shift ;;
	esac
done
# --out is relative to where the script was called from.
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
if [ ${#servers[@]} -eq 0 ]; then
	echo "usage: scripts/compare-versions.sh [--out DIR] [LABEL=]SERVER_BINARY... [-- RLBENCH_FLAGS...]" >&2
	exit 2
fi
. scripts/ensure-redis.sh
ensure_redis_server
mkdir -p bin "$out"
go build -o bin/rlbench ./cmd/rlbench
args=()
given() { case " $* " in *" $flag "* | *" $flag="*) return 0 ;; esac; return 1; }
for pair in "--strategy naive,multi-nx,lua" "--client all" "--clients 100" "--duration 10s"; do
	flag=${pair%% *}
	given "$@" || args+=($pair)
done
for s in "${servers[@]}"; do
	args+=(--redis-server "$s")
done
bin/rlbench "${args[@]}" "$@" --json "$out/compare.json" -q
bin/rlbench report "$out/compare.json" -o "$out/report.html"
echo "wrote $out/compare.json and $out/report.html"
