#!/usr/bin/env bash
# Measures `rlbench audit` against the redis-cli baseline the first seed
# describes, on one private redis-server: keys/s and peak RSS.
#
# It starts redis-server on a free loopback port (stopped at the end, also on
# Ctrl-C), fills it with --keys keys under "bench:" (a fraction --immortal of
# them with no TTL, the others with a TTL of an hour) and --other keys under
# "other:" that the pattern does not match, then audits "bench:*" three ways:
#
#   rlbench       bin/rlbench audit --match 'bench:*' --rate 0 --json ...
#   cli-lines     redis-cli --scan --pattern 'bench:*' | sed 's/^/PTTL /' | redis-cli | grep -c '^-1$'
#                 (redis-cli reads the commands from a pipe: one round trip each)
#   cli-pipe      redis-cli --scan --pattern 'bench:*' | awk (RESP PTTL) | redis-cli --pipe
#                 (pipelined, but --pipe counts replies only: it cannot count the -1s)
#
# and prints, per way, the keys examined, the immortal keys found (cli-pipe:
# -), the seconds, the keys/s and the peak RSS of the whole pipeline (GNU
# time's maximum resident set size, the largest process of it).
#
#   scripts/bench-audit.sh                          # 1,000,000 keys, 1% immortal
#   scripts/bench-audit.sh --keys 10000000
#   scripts/bench-audit.sh --short                  # CI: 20,000 keys, checks the counts agree
#   scripts/bench-audit.sh --keys 1000000 --other 2000000 --immortal 0.05
#
# Exit status: 0 whatever the speeds (it measures, it does not judge), 1 when
# something failed to run or the counts disagree, 2 for bad flags.
set -euo pipefail
cd "$(dirname "$0")/.."

keys=1000000
other=0
immortal=0.01
short=0
while [ $# -gt 0 ]; do
	case "$1" in
	--keys) keys="$2"; shift 2 ;;
	--other) other="$2"; shift 2 ;;
	--immortal) immortal="$2"; shift 2 ;;
	--short) short=1; keys=20000; other=5000; shift ;;
	-h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-audit.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
	esac
done
if ! [[ "$keys" =~ ^[1-9][0-9]*$ && "$other" =~ ^[0-9]+$ ]]; then
	echo "bench-audit.sh: --keys must be >= 1 and --other >= 0, got $keys and $other" >&2
	exit 2
fi
if ! awk -v f="$immortal" 'BEGIN { exit !(f ~ /^[0-9.]+$/ && f >= 0 && f <= 1) }'; then
	echo "bench-audit.sh: --immortal must be a fraction from 0 to 1, got $immortal" >&2
	exit 2
fi

. scripts/ensure-redis.sh
ensure_redis_server
server="${RLBENCH_REDIS_SERVER:-redis-server}"

for tool in jq redis-cli /usr/bin/time; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "bench-audit.sh: $tool not found (apt-get install redis-tools time)" >&2
		exit 1
	fi
done
mkdir -p bin
go build -o bin/rlbench ./cmd/rlbench


start_private_redis
cli=(redis-cli -h 127.0.0.1 -p "$port")

# Fill: every key under bench: holds its index; one in 1/immortal has no TTL.
every=$(awk -v f="$immortal" 'BEGIN { if (f <= 0) print 0; else printf "%d", 1 / f + 0.5 }')
echo "filling 127.0.0.1:$port with $keys bench: keys (1 in $every immortal) and $other other: keys ..." >&2
awk -v n="$keys" -v m="$other" -v every="$every" 'BEGIN {
	for (i = 0; i < n; i++) {
		k = "bench:" i; v = i ""
		if (every > 0 && i % every == 0) printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v
		else printf "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nEX\r\n$4\r\n3600\r\n", length(k), k, length(v), v
	}
	for (i = 0; i < m; i++) { k = "other:" i; printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\n1\r\n", length(k), k }
}' | "${cli[@]}" --pipe >/dev/null
want_immortal=$(awk -v n="$keys" -v every="$every" 'BEGIN { if (every > 0) printf "%d", int((n - 1) / every) + 1; else print 0 }')
echo "DBSIZE $("${cli[@]}" dbsize); server $("$server" --version | cut -d' ' -f3)" >&2

# measure NAME CMD: runs CMD under GNU time; prints seconds and peak RSS (KiB).
measure() {
	/usr/bin/time -f '%e %M' -o "$work/time" bash -c "$2" >"$work/$1.out"
	read -r secs rss <"$work/time"
	echo "$secs $rss"
}

printf '%-10s %10s %10s %8s %12s %10s\n' way keys immortal seconds keys/s peak_MiB
report() { # name keys immortal secs rss_kib
	awk -v name="$1" -v k="$2" -v im="$3" -v s="$4" -v rss="$5" 'BEGIN {
		printf "%-10s %10d %10s %8.2f %12.0f %10.1f\n", name, k, im, s, (s > 0 ? k / s : 0), rss / 1024 }'
}

read -r secs rss < <(measure rlbench "bin/rlbench audit --match 'bench:*' --addr 127.0.0.1:$port --rate 0 -q --json $work/audit.json >/dev/null")
got_keys=$(jq -r .keys "$work/audit.json")
got_immortal=$(jq -r .immortal "$work/audit.json")
report rlbench "$got_keys" "$got_immortal" "$secs" "$rss"

read -r secs rss < <(measure cli-lines "redis-cli -h 127.0.0.1 -p $port --scan --pattern 'bench:*' | sed 's/^/PTTL /' | redis-cli -h 127.0.0.1 -p $port | grep -c '^-1\$' || true")
cli_immortal=$(cat "$work/cli-lines.out")
report cli-lines "$keys" "$cli_immortal" "$secs" "$rss"

read -r secs rss < <(measure cli-pipe "redis-cli -h 127.0.0.1 -p $port --scan --pattern 'bench:*' | awk '{ printf \"*2\\r\\n\$4\\r\\nPTTL\\r\\n\$%d\\r\\n%s\\r\\n\", length(\$0), \$0 }' | redis-cli -h 127.0.0.1 -p $port --pipe")
pipe_replies=$(grep -o 'replies: [0-9]*' "$work/cli-pipe.out" | grep -o '[0-9]*' || echo 0)
report cli-pipe "$pipe_replies" - "$secs" "$rss"

if [ "$got_keys" != "$keys" ] || [ "$got_immortal" != "$want_immortal" ] || [ "$cli_immortal" != "$want_immortal" ] || [ "$pipe_replies" != "$keys" ]; then
	echo "bench-audit.sh: counts disagree: want $keys keys, $want_immortal immortal; rlbench $got_keys/$got_immortal, cli-lines $cli_immortal immortal, cli-pipe $pipe_replies replies" >&2
	exit 1
fi
