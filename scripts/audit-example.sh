#!/usr/bin/env bash
# Makes docs/audit.md's `rlbench audit` example: on a private redis-server on a
# free loopback port (stopped at the end, also on Ctrl-C), it writes with
# redis-cli --pipe
#
#   100,000 counters ratelimit:user:N:login: one in 200 immortal, holding
#           0, 50, 100, 150 or 200 (300 of them at or above the limit of
#           100: locked out); one in 1,000 with a TTL of 60,000 s (1000 x
#           the window: a limiter that gave EXPIREAT milliseconds); the
#           others with TTLs of 1 to 60 s;
#   50,000  session:N keys that the pattern leaves out;
#
# creates docs/audit.md's read-only user `auditor` (password s3cret), waits
# --wait seconds (20: a third of the counters expire) and runs docs/audit.md's
# audit as that user, printing its command and its report.
#
#   scripts/audit-example.sh
#   scripts/audit-example.sh --wait 0 --json prod.json
#   scripts/audit-example.sh --short    # CI: no wait, --rate 0, checks the
#                                       # immortal, locked-out and TTL-over counts
#
# Exit status: the audit's (0 when it finished), 1 when --short's counts
# are not the data's, 2 for bad flags.
set -euo pipefail
cd "$(dirname "$0")/.."

wait_s=20 json=prod.json short=false
while [ $# -gt 0 ]; do
	case "$1" in
	--wait) wait_s=${2:?--wait needs a value}; shift ;;
	--short) short=true wait_s=0 ;;
	--json) json=${2:?--json needs a value}; shift ;;
	-h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "audit-example.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if ! [[ "$wait_s" =~ ^[0-9]+$ ]]; then
	echo "audit-example.sh: --wait must be whole seconds >= 0, got $wait_s" >&2
	exit 2
fi

. scripts/ensure-redis.sh
ensure_redis_server
mkdir -p bin
go build -o bin/rlbench ./cmd/rlbench

start_private_redis
cli=(redis-cli -h 127.0.0.1 -p "$port")

awk 'function set(k, v, ex) {
	if (ex == "") printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v
	else printf "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nEX\r\n$%d\r\n%s\r\n", length(k), k, length(v), v, length(ex), ex
}
BEGIN {
	for (i = 0; i < 100000; i++) {
		k = "ratelimit:user:" i ":login"
		if (i % 200 == 0) set(k, (int(i / 200) % 5) * 50 "", "")
		else if (i % 1000 == 500) set(k, "1", "60000")
		else set(k, (i % 100) "", (1 + i % 60) "")
	}
	for (i = 0; i < 50000; i++) set("session:" i, "x", "3600")
}' | "${cli[@]}" --pipe >/dev/null
"${cli[@]}" ACL SETUSER auditor on '>s3cret' resetkeys '%R~ratelimit:*' resetchannels -@all +ping +scan +dbsize +pttl +type +getrange '+object|idletime' '+object|refcount' +info >/dev/null
echo "wrote 150,000 keys on 127.0.0.1:$port ($("${cli[@]}" info server | grep -o 'redis_version:[0-9.]*')); auditing in ${wait_s} s" >&2
sleep "$wait_s"

if $short; then
	json="$work/audit.json"
fi
cmd=(bin/rlbench audit --match 'ratelimit:*' --addr "127.0.0.1:$port" --user auditor --limit 100 --max-ttl 60 --sample 3 --json "$json")
if $short; then
	cmd+=(--rate 0 -q)
fi
printf '$ REDISCLI_AUTH=s3cret rlbench'
printf ' %q' "${cmd[@]:1}"
printf '\n'
REDISCLI_AUTH=s3cret "${cmd[@]}"
if $short; then
	got=$(jq -r '"\(.immortal) \(.locked_out) \(.ttl_over_max)"' "$json")
	if [ "$got" != "500 300 100" ]; then
		echo "audit-example.sh: immortal, locked out, TTL over max = $got; want 500 300 100" >&2
		exit 1
	fi
fi
