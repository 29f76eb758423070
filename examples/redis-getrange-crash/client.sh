#!/usr/bin/env bash
# The service around the bug: a producer stores a greeting and queues a
# job; a worker blocked on the queue (another connection) wakes and reads
# a range of the greeting. Run against the address in $1 (host:port).
set -uo pipefail
port=${1##*:}
cli() { redis-cli -p "$port" "$@"; }
cli SET greeting "hello world"
cli APPEND greeting "!"
cli STRLEN greeting
cli BLPOP jobs 5 &          # the worker, blocked on its own connection
worker=$!
sleep 0.3
cli LPUSH jobs greeting     # the producer wakes it
wait $worker
cli GETRANGE greeting 0 4
cli GETRANGE greeting -100 -1   # the incident: the server dies here
exit 0
