# shellcheck shell=bash
# Sourced by the other scripts: makes sure redis-server is on PATH, installing
# Debian's package when run as root with apt-get, and otherwise stopping with
# the exact command to run.
ensure_redis_server() {
	ensure_tools || return 1
	if [ -n "${RLBENCH_REDIS_SERVER:-}" ] || command -v redis-server >/dev/null 2>&1; then
		return 0
	fi
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "redis-server not found: installing Debian's redis-server package" >&2
		apt_install redis-server redis-tools || {
			echo "apt-get install redis-server failed" >&2
			return 1
		}
		# The package starts a system service on 6379; rlbench never uses it.
		return 0
	fi
	echo "redis-server not found on PATH. Install it first:" >&2
	echo "    sudo apt-get update && sudo apt-get install -y redis-server" >&2
	echo "or pass rlbench --redis-server /path/to/redis-server (and, for the tests, set RLBENCH_REDIS_SERVER=/path/to/redis-server)." >&2
	return 1
}

# ensure_tools makes sure the benchmark scripts' tools are on PATH: jq
# (bench-scale and bench-audit read rlbench's JSON), redis-cli
# (bench-audit's baseline) and GNU time (peak RSS).
ensure_tools() {
	local missing=()
	command -v jq >/dev/null 2>&1 || missing+=(jq)
	command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
	[ -x /usr/bin/time ] || missing+=(time)
	[ ${#missing[@]} = 0 ] && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "${missing[*]} not found: installing Debian's packages" >&2
		apt_install "${missing[@]}" || {
			echo "apt-get install ${missing[*]} failed" >&2
			return 1
		}
		return 0
	fi
	echo "${missing[*]} not found on PATH. Install it first:" >&2
	echo "    sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
	return 1
}

# apt_install installs Debian's packages "$@" with apt-get (as root), its
# output on stderr. When another apt-get or dpkg holds apt's locks (an
# unattended upgrade, another install) it waits for them, for at most
# $RLBENCH_APT_LOCK_TIMEOUT seconds (default 300), instead of failing at
# once: apt-get's own DPkg::Lock::Timeout for the dpkg lock of the install
# (-q, not -qq: it says "Waiting for cache lock"), and a loop for the
# package lists' lock of the update, which that option does not cover.
apt_install() {
	local timeout="${RLBENCH_APT_LOCK_TIMEOUT:-300}"
	apt_update "$timeout" &&
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$timeout" install -y -q "$@" >&2
}

# apt_update runs apt-get update, retrying for at most $1 seconds while
# another process holds the lock of the package lists.
apt_update() {
	local deadline=$((SECONDS + $1)) err said=""
	while :; do
		{ err=$(apt-get update -qq 2>&1 >&3); } 3>&2 && return 0
		case $err in
		*"Could not get lock"*) ;;
		*)
			printf '%s\n' "$err" >&2
			return 1
			;;
		esac
		if [ "$SECONDS" -ge "$deadline" ]; then
			printf '%s\n' "$err" >&2
			echo "apt-get update: still locked after $1 s (RLBENCH_APT_LOCK_TIMEOUT)" >&2
			return 1
		fi
		if [ -z "$said" ]; then
			echo "apt-get update: waiting (at most $1 s) for another process to release the lock of the package lists: ${err%%$'\n'*}" >&2
			said=1
		fi
		sleep 1
	done
}

# start_private_redis makes a work directory (work, removed at exit), starts
# redis-server ($RLBENCH_REDIS_SERVER, else the one on PATH) on a free
# loopback port with no persistence, its files and log in it, and waits
# until it answers PING. It sets work, port and pid, and an EXIT trap that
# stops the server and removes the directory (also on Ctrl-C).
start_private_redis() {
	local p server="${RLBENCH_REDIS_SERVER:-redis-server}" attempt
	work=$(mktemp -d)
	pid=""
	trap stop_private_redis EXIT
	trap 'exit 130' INT TERM
	# A port free when probed may be taken before the server binds it (a
	# test's server beside the script): a server that exits is started
	# again on another port.
	for attempt in $(seq 10); do
		port=""
		for _ in $(seq 100); do
			p=$((20000 + RANDOM % 40000))
			(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { port=$p; break; }
		done
		if [ -z "$port" ]; then
			echo "no free loopback port found" >&2
			return 1
		fi
		"$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/server.log" 2>&1 &
		pid=$!
		for _ in $(seq 100); do
			# Ours, not a server that took the port first (its process id).
			if redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | grep -q "^process_id:$pid\b"; then return 0; fi
			kill -0 "$pid" 2>/dev/null || break # it exited: the port was taken
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			break # running, but not answering
		fi
		wait "$pid" 2>/dev/null || true
		pid=""
		echo "redis-server could not start on 127.0.0.1:$port (attempt $attempt of 10); trying another port" >&2
	done
	echo "redis-server did not answer on 127.0.0.1:$port; its log:" >&2
	cat "$work/server.log" >&2
	return 1
}

# stop_private_redis stops start_private_redis's server and removes its
# work directory.
stop_private_redis() {
	if [ -n "${pid:-}" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	if [ -n "${work:-}" ]; then rm -rf "$work"; fi
}
