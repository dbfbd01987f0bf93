#!/usr/bin/env bash
# Measures what TLS costs (issue 13): the same private redis-server type,
# strategy, clients and workers, over plain TCP and over TLS (--private-tls:
# a certificate from a throwaway CA that rlbench generates), in --rounds
# rounds (3) that alternate which side goes first. Each run is
#
#   rlbench --strategy lua --client go-redis,rueidis --clients 50 --duration 10s [--private-tls]
#
# with a fresh private server each time. It prints each run's command, then
# per cell (strategy/client) and round the throughput and p99 of both sides
# and the ratios TLS/plain, and the median ratio over the rounds. The
# machine may be shared: trust the ratios of one invocation, not the
# absolute figures.
#
#   scripts/bench-tls.sh                              # 3 rounds of 10 s runs
#   scripts/bench-tls.sh --rounds 5 --duration 20s --clients 100
#   scripts/bench-tls.sh --strategy multi-nx --rlbench /tmp/other/rlbench
#   scripts/bench-tls.sh --short                      # CI: tiny runs, no speed asserted
#
# Exit status: 0 whatever the figures, 1 when a run failed, 2 for bad flags.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
rounds=3 duration=10s clients=50 strategy=lua client_list=go-redis,rueidis rlbench="" warmup=1s
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=${2:?--rounds needs a value}; shift ;;
	--duration) duration=${2:?--duration needs a value}; shift ;;
	--clients) clients=${2:?--clients needs a value}; shift ;;
	--strategy) strategy=${2:?--strategy needs a value}; shift ;;
	--client) client_list=${2:?--client needs a value}; shift ;;
	--rlbench) rlbench=${2:?--rlbench needs a path}; shift ;;
	--short) rounds=1 duration=1s warmup=0s ;;
	-h | --help) usage ;;
	*) echo "bench-tls: unknown flag $1" >&2; usage ;;
	esac
	shift
done
case "$rounds" in '' | *[!0-9]* | 0) echo "bench-tls: --rounds must be a whole number >= 1, got $rounds" >&2; exit 2 ;; esac
command -v jq >/dev/null 2>&1 || { echo "bench-tls: jq not found on PATH (apt-get install jq)" >&2; exit 1; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ -z "$rlbench" ]; then
	rlbench=$out/rlbench
	go build -o "$rlbench" ./cmd/rlbench
fi

# run NAME ARGS...: one rlbench run into $out/NAME.json.
run() {
	local name=$1
	shift
	local cmd=("$rlbench" --strategy "$strategy" --client "$client_list" --clients "$clients" --duration "$duration" --warmup "$warmup" "$@")
	echo "\$ rlbench ${cmd[*]:1}"
	if ! "${cmd[@]}" --json "$out/$name.json" >"$out/$name.txt" 2>&1 || ! jq -e '.runs | length > 0' "$out/$name.json" >/dev/null 2>&1; then
		echo "bench-tls: run $name failed:" >&2
		cat "$out/$name.txt" >&2
		exit 1
	fi
}

for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		run "plain-$r"
		run "tls-$r" --private-tls
	else
		run "tls-$r" --private-tls
		run "plain-$r"
	fi
done

# cells: every strategy/client of the first plain run.
mapfile -t cells < <(jq -r '.runs[] | .strategy + "/" + .client' "$out/plain-1.json")
field() { # field SIDE ROUND CELL EXPR
	jq -r --arg cell "$3" ".runs[] | select(.strategy + \"/\" + .client == \$cell) | $4" "$out/$1-$2.json"
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo
echo "server: $(jq -r '.server | "\(.name) \(.version)"' "$out/plain-1.json"), $clients workers, $duration per run, $rounds rounds (plain and TLS alternate which goes first)"
printf '%-22s %5s %12s %12s %9s %10s %10s %9s\n' cell round plain_thr/s tls_thr/s thr_ratio plain_p99 tls_p99 p99_ratio
for cell in "${cells[@]}"; do
	thr_ratios=() p99_ratios=()
	for r in $(seq 1 "$rounds"); do
		pt=$(field plain "$r" "$cell" .throughput_per_s) tt=$(field tls "$r" "$cell" .throughput_per_s)
		pp=$(field plain "$r" "$cell" .latency_us.p99) tp=$(field tls "$r" "$cell" .latency_us.p99)
		tr=$(awk -v a="$tt" -v b="$pt" 'BEGIN { printf "%.2f", a / b }')
		lr=$(awk -v a="$tp" -v b="$pp" 'BEGIN { printf "%.2f", a / b }')
		thr_ratios+=("$tr") p99_ratios+=("$lr")
		printf '%-22s %5s %12.0f %12.0f %9s %8.0fµs %8.0fµs %9s\n' "$cell" "$r" "$pt" "$tt" "$tr" "$pp" "$tp" "$lr"
	done
	printf '%-22s %5s %12s %12s %9s %10s %10s %9s\n' "$cell" median "" "" \
		"$(printf '%s\n' "${thr_ratios[@]}" | median)" "" "" "$(printf '%s\n' "${p99_ratios[@]}" | median)"
done
