#!/usr/bin/env bash
# The test command. It installs redis-server when it is missing (root with
# apt-get), and Chromium for the HTML report's test, vets the code, runs each benchmark briefly and the peer
# comparison, the scale measurement (bench-scale.sh) and the audit
# benchmark (bench-audit.sh) and docs/audit.md's audit example
# (audit-example.sh) in their short modes (so that none of them
# rots; they print figures and assert no speed), then runs every test against private
# redis-servers that the tests start on free loopback ports. Extra arguments
# go to that last `go test` (e.g. -run TestAudit). Its timeout (30m) is what
# a loaded machine needs: the root package alone ran past 10 minutes beside
# a busy loop per core. Its -parallel 8 lets eight of a package's parallel
# tests run at once (go test's default is GOMAXPROCS, 2 here): they mostly
# wait on their servers and timers, and the whole suite took 4.5 minutes
# instead of 8 on a quiet 2-core machine (the root package 150 s, was 337).
#
# scripts/test.sh --repeat N [--all] [--cpu-hog] [go test flags] runs only
# the integration tests that start clusters, Sentinel set-ups, failovers,
# split brains or network faults, or with --all the whole suite (the same
# `go test` as the last step above), N times over (each a fresh
# `go test -count=1`), and prints how many of the N passed; it exits 1
# unless all did. --cpu-hog keeps every core busy with a shell loop beside
# them meanwhile, as a loaded CI machine would.
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=0
hog=0
all=0
# suiteTimeout bounds each `go test` of the whole suite (see above).
suiteTimeout=30m
suite=(-timeout "$suiteTimeout" -parallel 8)
while [ $# -gt 0 ]; do
	case "$1" in
	--repeat)
		[[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || {
			echo "scripts/test.sh: --repeat needs a count of 1 or more, e.g. --repeat 10" >&2
			exit 2
		}
		repeat=$2
		shift 2
		;;
	--cpu-hog)
		hog=1
		shift
		;;
	--all)
		all=1
		shift
		;;
	*) break ;;
	esac
done
if [ "$repeat" = 0 ] && { [ "$hog" = 1 ] || [ "$all" = 1 ]; }; then
	echo "scripts/test.sh: --cpu-hog and --all go with --repeat N" >&2
	exit 2
fi
. scripts/ensure-redis.sh
ensure_redis_server
if [ "$repeat" -gt 0 ]; then
	# The tests that start clusters, Sentinel set-ups or failovers; with
	# --all, every test (the HTML report's needs Chromium).
	only=(-run 'Cluster|Sentinel|Failover|Reshard|MoveSlot|NodeRestart|DeadNode|NodesAndDelete|^TestMasters$|^TestTake$|LostIncrements|SaturationNeedsOneServer|MatrixOfTargets|SplitBrain|ReplyLoss|Partition|NetworkFaults|ScriptLoad|NoLostIncrements')
	if [ "$all" = 1 ]; then
		only=()
		. scripts/ensure-chromium.sh
		ensure_chromium
	fi
	hogs=()
	stop_hogs() { [ ${#hogs[@]} = 0 ] || kill "${hogs[@]}" 2>/dev/null || true; }
	trap stop_hogs EXIT
	if [ "$hog" = 1 ]; then
		for _ in $(seq "$(nproc)"); do
			bash -c 'while :; do :; done' &
			hogs+=($!)
		done
		echo "scripts/test.sh: ${#hogs[@]} busy loops beside the tests (one per core)"
	fi
	go test -count=1 -run '^$' ./... >/dev/null # build once, outside the count
	passed=0
	for i in $(seq "$repeat"); do
		start=$SECONDS
		if go test -count=1 "${suite[@]}" ${only[@]+"${only[@]}"} "$@" ./... >"${TMPDIR:-/tmp}/rlbench-repeat-$i.log" 2>&1; then
			passed=$((passed + 1))
			echo "repeat $i of $repeat: pass ($((SECONDS - start)) s)"
		else
			echo "repeat $i of $repeat: FAIL ($((SECONDS - start)) s); its failures:"
			grep -E '^(--- FAIL|FAIL|panic:)|_test\.go:[0-9]+:' "${TMPDIR:-/tmp}/rlbench-repeat-$i.log" | head -40 || true
			echo "(whole log: ${TMPDIR:-/tmp}/rlbench-repeat-$i.log)"
		fi
	done
	echo "repeat: $passed of $repeat passed"
	[ "$passed" = "$repeat" ]
	exit
fi
# The HTML report's test renders the page in headless Chromium.
. scripts/ensure-chromium.sh
ensure_chromium
go vet ./...
go test -count=1 -timeout 5m -run '^$' -bench . -benchtime 200x ./...
peers=$(mktemp)
trap 'rm -f "$peers"' EXIT
scripts/bench-peers.sh --short --out "$peers"
scripts/bench-scale.sh --short
scripts/bench-audit.sh --short
scripts/audit-example.sh --short >/dev/null
go test -count=1 "${suite[@]}" "$@" ./...
