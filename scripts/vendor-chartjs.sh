#!/usr/bin/env bash
# Vendors Chart.js for package htmlreport: fetches the npm package with
# `npm pack`, checks it against the registry's integrity hash, and copies
# dist/chart.umd.min.js and the licence into htmlreport/assets/. Give another
# version as the first argument, then update htmlreport.ChartJSVersion and
# the package doc, and run `go test ./htmlreport/ -update`.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-4.6.1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "chart.js@$version" >/dev/null)
tarball="$tmp/chart.js-$version.tgz"
want="$(npm view "chart.js@$version" dist.integrity)"
got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$got" != "$want" ]; then
	echo "chart.js@$version: integrity $got; the registry says $want" >&2
	exit 1
fi
tar -xzf "$tarball" -C "$tmp"
cp "$tmp/package/dist/chart.umd.min.js" htmlreport/assets/chart.umd.min.js
cp "$tmp/package/LICENSE.md" htmlreport/assets/chart.js.LICENSE.md
echo "vendored chart.js@$version ($want) into htmlreport/assets/"
