# shellcheck shell=bash
# Sourced by the test scripts, or run on its own: makes sure a headless
# Chromium is on PATH for the HTML report tests (package htmlreport and
# `rlbench report`), installing Debian's chromium package when run as root
# with apt-get, and otherwise stopping with the exact command to run.
# $RLBENCH_CHROMIUM, if set, names the binary to use instead.
. "$(dirname "${BASH_SOURCE[0]}")/ensure-redis.sh" # apt_install
ensure_chromium() {
	if [ -n "${RLBENCH_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 ||
		command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; then
		return 0
	fi
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "chromium not found: installing Debian's chromium package (for the HTML report tests)" >&2
		apt_install chromium || {
			echo "apt-get install chromium failed" >&2
			return 1
		}
		return 0
	fi
	echo "chromium not found on PATH. The HTML report tests need it. Install it first:" >&2
	echo "    sudo apt-get update && sudo apt-get install -y chromium" >&2
	echo "or set RLBENCH_CHROMIUM=/path/to/chromium." >&2
	return 1
}

# Run on its own rather than sourced: install now.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	ensure_chromium
fi
