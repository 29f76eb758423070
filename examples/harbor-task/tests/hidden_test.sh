#!/usr/bin/env bash
# The hidden test a task author would write for the failure alone:
# GETRANGE with a start before the beginning of the string answers the
# whole string. Usage: hidden_test.sh REDIS_SERVER_BUILD. Exit 0 = pass.
set -euo pipefail
build=$1
dir=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
"$build" --port 0 --unixsocket "$dir/redis.sock" --save "" --appendonly no --daemonize no >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -S "$dir/redis.sock" ] && break; sleep 0.05; done
cli() { redis-cli -s "$dir/redis.sock" "$@"; }
cli SET greeting "hello world!" >/dev/null
got=$(cli GETRANGE greeting -100 -1 2>&1) || true
if [ "$got" != "hello world!" ]; then
	echo "GETRANGE greeting -100 -1 answered '$got', want 'hello world!'" >&2
	exit 1
fi
