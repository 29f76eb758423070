#!/usr/bin/env bash
# The hidden test a task author would write for the failure alone: STRLEN
# of the 24-byte greeting is 24. Usage: hidden_test.sh REDIS_SERVER_BUILD.
set -euo pipefail
build=$1
dir=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
"$build" --port 0 --unixsocket "$dir/redis.sock" --save "" --appendonly no --daemonize no >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -S "$dir/redis.sock" ] && break; sleep 0.05; done
cli() { redis-cli -s "$dir/redis.sock" "$@"; }
cli SET greeting "hello world, how are you" >/dev/null
got=$(cli STRLEN greeting 2>&1) || true
if [ "$got" != 24 ]; then
	echo "STRLEN greeting answered '$got', want 24" >&2
	exit 1
fi
