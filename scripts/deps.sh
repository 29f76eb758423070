#!/usr/bin/env bash
# Installs what Kavach's build, tests and demo need when it is missing:
# Debian packages (Redis server and tools, a C compiler for the replay's
# clock library, nutcracker for the benchmark, Chromium for the HTML
# report's test) and the Go modules, then builds the clock library into
# Kavach's cache. Safe to run again: it installs nothing that is already
# there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null || need+=(redis-tools)
# The replay's clock library (replay/clocklib) is C, built with the
# system's compiler.
command -v cc >/dev/null || need+=(gcc)
[ -e /usr/include/stdio.h ] || need+=(libc6-dev)
command -v nutcracker >/dev/null || need+=(nutcracker)
command -v zstd >/dev/null || need+=(zstd)
# Redis's own test suite (scripts/redis-suite.sh) runs on its Tcl runner.
command -v tclsh8.6 >/dev/null || command -v tclsh8.7 >/dev/null || need+=(tcl8.6)
# Tests replay under load: stress-ng saturates the cores beside them.
command -v stress-ng >/dev/null || need+=(stress-ng)
# The HTML report's test opens its pages in headless Chromium.
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	echo "deps: installing ${need[*]}" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The packaged service is not needed running: tests start their own servers.
go mod download
# The clock library, built now rather than by the first replay.
go run ./internal/clockbuild >/dev/null
