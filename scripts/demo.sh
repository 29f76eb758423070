#!/usr/bin/env bash
# Kavach's main job as far as it is built: record an incident on a real
# Redis through `kavach record`, then show the fixture. A small client
# session (a job queue) runs through the proxy; its last command crashes
# the server, and that step becomes the fixture's failure.
set -euo pipefail
cd "$(dirname "$0")/.."
KAVACH=${KAVACH:-bin/kavach}
work=$(mktemp -d)
trap 'kill $rec 2>/dev/null || true; rm -rf "$work"' EXIT

echo "== kavach record: a job queue on redis-server, through the recording proxy" >&2
"$KAVACH" record --protocol resp --out "$work/incident.kavach" --ready-file "$work/addr" \
	-- "$(command -v redis-server)" --enable-debug-command yes &
rec=$!
for _ in $(seq 100); do [ -s "$work/addr" ] && break; sleep 0.1; done
port=$(cut -d: -f2 "$work/addr")
cli() { redis-cli -p "$port" "$@"; }

cli HSET job:1 kind resize status queued >/dev/null
cli RPUSH jobs job:1 >/dev/null
cli BLPOP jobs 1 >/dev/null
cli HSET job:1 status running >/dev/null
cli INCR job:1 >/dev/null || true       # an error reply: WRONGTYPE
cli EXPIRE job:1 3600 >/dev/null
cli DEBUG SEGFAULT >/dev/null 2>&1 || true  # the incident: the server dies
wait $rec || true

echo >&2
echo "== kavach show: the fixture, step by step" >&2
"$KAVACH" show "$work/incident.kavach"
echo >&2
echo "== kavach show --step 7: the failing step in full" >&2
"$KAVACH" show "$work/incident.kavach" --step 7
