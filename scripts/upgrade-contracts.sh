#!/usr/bin/env bash
# The real-upgrade test bed's contracts (docs/upgrade.md).
#
#   scripts/upgrade-contracts.sh record   # record both contracts on bookworm's Redis 7.0.15
#   scripts/upgrade-contracts.sh regrade  # grade them on trixie's Redis and Valkey: the table
#
# record writes examples/upgrade-contracts/redis-cli.kavach (the session of
# docs/upgrade-workload.txt typed into stock redis-cli, while another
# redis-cli is subscribed to the channel it publishes on) and
# go-redis.kavach (examples/upgrade-contracts/goredis: a subscriber and a
# publisher through go-redis). regrade builds trixie's Redis and Valkey
# (scripts/redis-build.sh; cached) and grades each contract on the old
# build itself and on both, printing every fixture's verdict and each
# step that differs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
DIR=examples/upgrade-contracts
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kavach-upgrade.XXXXXX")
KPID="" SPID=""
cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null || true
	if [ -n "$KPID" ] && kill -0 "$KPID" 2>/dev/null; then kill -INT "$KPID"; wait "$KPID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
KAVACH=$TMP/kavach
go build -o "$KAVACH" ./cmd/kavach
OLD=$(scripts/redis-build.sh)

# record FIXTURE SENDER: the old build behind kavach record, SENDER given host and port.
record() {
	rm -f "$TMP/addr"
	"$KAVACH" record --protocol resp --out "$1" --ready-file "$TMP/addr" -- "$OLD" 2>>"$TMP/record.log" &
	KPID=$!
	for _ in $(seq 100); do [ -s "$TMP/addr" ] && break; sleep 0.1; done
	local addr
	addr=$(cat "$TMP/addr")
	"$2" "${addr%:*}" "${addr##*:}"
	sleep 0.3
	kill -INT "$KPID"; wait "$KPID"; KPID=""
}
with_cli() {
	redis-cli -h "$1" -p "$2" SUBSCRIBE news >"$TMP/subscriber.out" &
	SPID=$!
	sleep 0.5
	redis-cli -h "$1" -p "$2" <docs/upgrade-workload.txt >"$TMP/workload.out"
	sleep 0.3
	kill "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=""
	grep -q '^second$' "$TMP/subscriber.out" || { echo "the subscriber did not get the messages" >&2; exit 1; }
}
with_goredis() { go run ./examples/upgrade-contracts/goredis "$1:$2"; }

case "${1:-}" in
record)
	record "$DIR/redis-cli.kavach" with_cli
	record "$DIR/go-redis.kavach" with_goredis
	for f in "$DIR"/*.kavach; do "$KAVACH" replay "$OLD" "$f" | head -1; done
	;;
regrade)
	REDIS8=$(KAVACH_REDIS_SUITE=trixie scripts/redis-build.sh)
	VALKEY=$(KAVACH_REDIS_SUITE=trixie KAVACH_REDIS_SOURCE=valkey scripts/redis-build.sh)
	for f in "$DIR"/*.kavach; do
		for b in "old:$OLD" "redis8:$REDIS8" "valkey:$VALKEY"; do
			name=${b%%:*} new=${b#*:}
			"$KAVACH" diff "$OLD" "$new" "$f" --out "$TMP/report.json" --brief -j 2 >"$TMP/brief" || true
			echo "== $(basename "$f") on $name: $(cut -d' ' -f1 "$TMP/brief")"
			jq -r '.evidence.new.steps[] | select((.diffs // []) | length > 0) | "step \(.step): \(.request) | \([.diffs[] | tostring] | join("; ") | .[0:200])"' "$TMP/report.json"
		done
	done
	;;
*)
	echo "usage: scripts/upgrade-contracts.sh record|regrade" >&2
	exit 2
	;;
esac
