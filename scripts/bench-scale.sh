#!/usr/bin/env bash
# Measures what rlbench costs as the work grows (issue 16, targets 1-4), on one
# private redis-server started on a free loopback port (stopped at the end,
# also on Ctrl-C), and prints each figure after the command that produced it:
#
#   1. keys: the lua strategy with each client at --keys 1e5, 1e6 and 1e7,
#      in --rounds rounds (3): rlbench's peak RSS, its throughput and the
#      ratio to the same client's run at the first key count in the same
#      round (and the median ratio over the rounds), the server's CPU and
#      both sides' CPU per decision (from rlbench's self-check; a busy
#      machine disturbs them less than throughput), the server's memory with the run's keys kept (INFO
#      memory used_memory, then FLUSHALL: the server is this script's own);
#   2. the same runs' admission coverage (admission_keys_tracked: over and
#      the window-span figure cover keys {0} to {N-1} when the run has more);
#   3. workers: --clients 10000 with each client: peak RSS and throughput;
#   4. a long closed-loop run per client: RSS at minute 2 against RSS at the
#      end of the load, and the length of the per-second series.
#
# Peak RSS is GNU time's "Maximum resident set size" when /usr/bin/time is
# there, else the highest VmHWM read from /proc every half second. The machine
# may be shared: compare ratios taken in one invocation, not absolute figures.
#
#   scripts/bench-scale.sh                      # 20 s per run, 3 rounds, a 30-minute long run per client
#   scripts/bench-scale.sh --duration 10s --long 10m --clients-list rueidis
#   scripts/bench-scale.sh --rlbench /tmp/old/rlbench   # measure another build
#   scripts/bench-scale.sh --sections "keys workers"    # any of keys, workers, long
#   scripts/bench-scale.sh --short              # CI: everything tiny, asserts no speed
#
# --short checks that every run succeeds, that a run with more keys than
# admission.MaxTrackedKeys (10,000) says so in its JSON and one with fewer
# does not; in every mode, that the long run's per-second series covers the
# whole load and sums to its decisions.
# Exit status: 0 whatever the figures, 1 when a run or a check failed, 2 for
# bad flags.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
duration=20s long=30m early=120 keys_list="100000 1000000 10000000" workers=10000
worker_keys=100000 clients_list="go-redis rueidis" rlbench="" out="" short=false sections="keys workers long"
max_tracked=10000 # admission.MaxTrackedKeys
rounds=3
while [ $# -gt 0 ]; do
	case "$1" in
	--duration) duration=${2:?--duration needs a value}; shift ;;
	--long) long=${2:?--long needs a value}; shift ;;
	--keys-list) keys_list=${2:?--keys-list needs a value}; shift ;;
	--workers) workers=${2:?--workers needs a value}; shift ;;
	--clients-list) clients_list=${2:?--clients-list needs a value}; shift ;;
	--sections) sections=${2:?--sections needs a value}; shift ;;
	--rounds) rounds=${2:?--rounds needs a value}; shift ;;
	--rlbench) rlbench=${2:?--rlbench needs a value}; shift ;;
	--out) out=${2:?--out needs a value}; shift ;;
	--short) short=true ;;
	-h | --help) usage ;;
	*) echo "bench-scale: unknown flag $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if $short; then
	# 200000 keys: beyond workload.KeyTableMax and admission.MaxTrackedKeys.
	duration=1s long=4s early=2 keys_list="1000 200000" workers=500 worker_keys=1000 rounds=1
fi
for tool in jq redis-cli; do
	command -v "$tool" >/dev/null 2>&1 || { echo "bench-scale: $tool not found on PATH (apt-get install jq redis-tools)" >&2; exit 1; }
done
. scripts/ensure-redis.sh
ensure_redis_server
if [ -z "$rlbench" ]; then
	mkdir -p bin
	go build -o bin/rlbench ./cmd/rlbench
	rlbench=bin/rlbench
fi
tmp=""
if [ -z "$out" ]; then
	out=$(mktemp -d)
	# --short's files are of no interest; a full run's are kept.
	! $short || tmp=$out
fi
mkdir -p "$out"
server_bin=${RLBENCH_REDIS_SERVER:-redis-server}

# The private server: a random free port, retried on a clash.
server_pid="" port=""
cleanup() {
	[ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
	[ -z "$tmp" ] || { wait 2>/dev/null; rm -rf "$tmp"; }
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for _ in 1 2 3 4 5 6 7 8 9 10; do
	port=$((20000 + RANDOM % 30000))
	"$server_bin" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --maxclients 20000 \
		--dir "$out" >"$out/redis.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 50); do
		# Ours, not a server that took the port first (its process id).
		redis-cli -p "$port" info server 2>/dev/null | grep -q "^process_id:$server_pid\b" && break 2
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$server_pid" 2>/dev/null || true
	server_pid=""
done
[ -n "$server_pid" ] || { echo "bench-scale: could not start $server_bin (see $out/redis.log)" >&2; exit 1; }
addr=127.0.0.1:$port
echo "bench-scale: private $("$server_bin" --version | cut -d' ' -f1-3) on $addr; $(nproc) CPUs; files in $out"

failed=0
fail() { echo "FAILED: $*"; failed=1; }

# measure NAME ARGS...: runs rlbench with ARGS, writing NAME.json, NAME.rss
# (elapsed seconds and VmRSS in KiB, one line per half second) and NAME.time;
# prints the command first. Sets peak_kib.
measure() {
	local name=$1
	shift
	echo
	echo "\$ rlbench $* --json $name.json"
	local timer=()
	[ -x /usr/bin/time ] && timer=(/usr/bin/time -v -o "$out/$name.time")
	"${timer[@]}" "$rlbench" "$@" --json "$out/$name.json" >"$out/$name.out" 2>&1 &
	local pid=$! child="" start=$SECONDS hwm=0 t0
	t0=$(date +%s.%N)
	: >"$out/$name.rss"
	while kill -0 "$pid" 2>/dev/null; do
		[ -n "$child" ] || child=$( ((${#timer[@]})) && pgrep -P "$pid" | head -1 || echo "$pid")
		if [ -n "$child" ] && [ -r "/proc/$child/status" ]; then
			local rss h
			rss=$(awk '/^VmRSS/ {print $2}' "/proc/$child/status" 2>/dev/null || true)
			h=$(awk '/^VmHWM/ {print $2}' "/proc/$child/status" 2>/dev/null || true)
			[ -z "$rss" ] || awk -v now="$(date +%s.%N)" -v t0="$t0" -v rss="$rss" 'BEGIN {printf "%.1f %d\n", now - t0, rss}' >>"$out/$name.rss"
			[ -z "$h" ] || [ "$h" -le "$hwm" ] || hwm=$h
		fi
		sleep 0.5
	done
	local rc=0
	wait "$pid" || rc=$?
	if [ -f "$out/$name.time" ]; then
		peak_kib=$(awk -F': ' '/Maximum resident/ {print $2}' "$out/$name.time")
	else
		peak_kib=$hwm
	fi
	if [ "$rc" != 0 ] || ! jq -e '.runs[0].decisions > 0' "$out/$name.json" >/dev/null 2>&1; then
		fail "rlbench exited $rc after $((SECONDS - start)) s; its output:"
		tail -5 "$out/$name.out"
		return 1
	fi
}

# per_decision(CORES): jq for a run's CPU per decision, in µs, from its
# self-check's cores over the load phase.
per_decision='def per_decision(c): if .saturation then (.saturation | c) * .duration_s * 1e6 / .decisions * 100 | round / 100 else "?" end; per_decision'
# field NAME EXPR: a jq expression over runs[0] of NAME.json.
field() { jq -r ".runs[0] | $2" "$out/$1.json"; }
mib() { echo $((${1:-0} / 1024)); }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print "?"}'; }

want() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }

want keys && echo && echo "== 1-2. keys: peak RSS and throughput by key count; server memory with the keys kept"
want keys && for client in $clients_list; do
	: >"$out/ratios-$client"
	for round in $(seq "$rounds"); do
	base=""
	for keys in $keys_list; do
		name=keys-$client-$keys-$round
		redis-cli -p "$port" flushall >/dev/null
		measure "$name" --addr "$addr" --prefix rl: --strategy lua --client "$client" --clients 200 \
			--keys "$keys" --limit 1000000 --duration "$duration" --keep-keys -q || continue
		thr=$(field "$name" '.throughput_per_s | floor')
		[ -n "$base" ] || base=$thr
		used=$(redis-cli -p "$port" info memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r')
		dbsize=$(redis-cli -p "$port" dbsize)
		tracked=$(field "$name" '.admission_keys_tracked // "all"')
		echo "$keys $(ratio "$thr" "$base")" >>"$out/ratios-$client"
		echo "round $round, $client --keys $keys: rlbench peak RSS $(mib "$peak_kib") MiB, $thr decisions/s ($(ratio "$thr" "$base") x the first key count), server $(field "$name" '.saturation.server_cpu // "?"') cores; CPU per decision: rlbench $(field "$name" "$per_decision(.client_cpu)") µs, server $(field "$name" "$per_decision(.server_cpu)") µs; server memory with the run's $dbsize keys: $((used / 1048576)) MiB (INFO memory used_memory); admission covers: $tracked keys"
		if $short; then
			if [ "$keys" -gt "$max_tracked" ] && [ "$tracked" != "$max_tracked" ]; then
				fail "--keys $keys: admission_keys_tracked = $tracked; want $max_tracked (admission.MaxTrackedKeys)"
			elif [ "$keys" -le "$max_tracked" ] && [ "$tracked" != all ]; then
				fail "--keys $keys: admission_keys_tracked = $tracked; want absent (every key covered)"
			fi
		fi
	done
	done
	for keys in $keys_list; do
		echo "$client --keys $keys: median throughput ratio to the first key count over $rounds round(s): $(awk -v k="$keys" '$1 == k {print $2}' "$out/ratios-$client" | sort -n |
			awk '{v[NR] = $1} END {if (NR == 0) print "?"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}')"
	done
done
redis-cli -p "$port" flushall >/dev/null

want workers && echo && echo "== 3. workers: --clients $workers"
want workers && for client in $clients_list; do
	name=workers-$client
	measure "$name" --addr "$addr" --prefix rl: --strategy lua --client "$client" --clients "$workers" \
		--keys "$worker_keys" --limit 1000000 --duration "$duration" -q || continue
	echo "$client --clients $workers: rlbench peak RSS $(mib "$peak_kib") MiB, $(field "$name" '.throughput_per_s | floor') decisions/s over $(field "$name" '.saturation.connections_opened // "?"') connections ($(field "$name" '.client_options'))"
done

want long && echo && echo "== 4. a long run: RSS at ${early}s against the end of the load"
want long && for client in $clients_list; do
	name=long-$client
	measure "$name" --addr "$addr" --prefix rl: --strategy lua --client "$client" --clients 200 \
		--keys 1000000 --limit 1000000 --duration "$long" -q || continue
	seconds=$(field "$name" '.per_second | length')
	# The load ends after start-up, the warm-up (1 s) and the load itself:
	# the last sample before 1 s + duration_s is at (or just before) its end.
	load_s=$(field "$name" '.duration_s')
	at_early=$(awk -v t="$early" '$1 >= t {print $2; exit}' "$out/$name.rss")
	at_end=$(awk -v d="$load_s" '$1 <= d + 1 {v = $2} END {print v}' "$out/$name.rss")
	summed=$(field "$name" '.per_second | map(.decisions) | add')
	decisions=$(field "$name" '.decisions')
	# An entry spans more than a second when the monitor missed a tick (a
	# starved CPU): its t_s says so, and no decision is lost.
	widest=$(field "$name" '[.per_second[].t_s] as $t | [0, range(1; $t | length) | $t[.] - $t[. - 1]] | max | . * 10 | round / 10')
	last=$(field "$name" '.per_second[-1].t_s | floor')
	echo "$client --duration $long: RSS $(mib "$at_early") MiB at ${early}s from the start, $(mib "$at_end") MiB at the end of the load ($(ratio "${at_end:-0}" "${at_early:-0}") x), peak $(mib "$peak_kib") MiB; per-second series: $seconds entries to t=${last}s (widest ${widest}s) over a load of $load_s s, summing to $summed of $decisions decisions"
	if [ "$summed" != "$decisions" ] || [ "$last" -lt "${load_s%.*}" ]; then
		fail "long run: the per-second series sums to $summed decisions and ends at ${last}s; want $decisions, and the end of the ${load_s}s load"
	fi
done
exit "$failed"
