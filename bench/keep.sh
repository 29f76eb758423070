#!/usr/bin/env bash
# kavach record --keep: how long a cut of a large stretch takes, what disk
# the segments take against --keep-bytes, and the latency of requests sent
# while the cut is written (docs/record.md, "Always on").
#
#   1. redis-server, and kavach record --keep 10m --keep-bytes KEEPB --state none
#      in front of it.
#   2. redis-benchmark SETs of SIZE-byte random values (-r) through the
#      recorder until about MB megabytes went through.
#   3. the segments' size on disk (du) against --keep-bytes.
#   4. the latency of PINGs through the recorder (one client) with no cut;
#      then the same while `kavach record --cut` writes a cut of the whole
#      stretch, timed from the request to the cut's path printed.
#
# Environment: MB (default 100), SIZE (default 100000), KEEPB (default
# 1073741824: the stretch is kept whole), KEEP=1 keeps the temporary directory.
set -euo pipefail

MB=${MB:-100}
SIZE=${SIZE:-100000}
KEEPB=${KEEPB:-1073741824}
KEEP=${KEEP:-0}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KAVACH=$ROOT/bin/kavach
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kavach-keep.XXXXXX")
PIDS=()
cleanup() {
	set +e
	for pid in "${PIDS[@]}"; do kill -INT "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	if [ "$KEEP" = 1 ]; then echo "keep.sh: kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
log() { echo "keep.sh: $*" >&2; }
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
	done
}
wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	log "nothing listens on $1"
	return 1
}
# ping_latency PORT: "p50 p99 max" in ms of 20000 PINGs from one client.
ping_latency() {
	redis-benchmark -h 127.0.0.1 -p "$1" -c 1 -n 20000 -t ping_mbulk --csv 2>/dev/null |
		awk -F'","' 'NR == 2 { print $5, $7, $8 }' | tr -d '"'
}

go build -o "$KAVACH" ./cmd/kavach
RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$TMP" --logfile "$TMP/redis.log" &
PIDS+=("$!")
wait_port "$RPORT"
KPORT=$(free_port)
"$KAVACH" record --protocol resp --out "$TMP/cuts" --keep 10m --keep-bytes "$KEEPB" --state none \
	--upstream "127.0.0.1:$RPORT" --listen "127.0.0.1:$KPORT" 2>"$TMP/kavach.log" &
PIDS+=("$!")
wait_port "$KPORT"

n=$((MB * 1000000 / SIZE))
log "sending $n SETs of $SIZE bytes (about $MB MB) through the recorder"
redis-benchmark -h 127.0.0.1 -p "$KPORT" -c 4 -n "$n" -d "$SIZE" -r 1000 -t set -q >/dev/null
sleep 1 # the last segment's blocks flushed
segs=$(du -sb "$TMP"/cuts/.segments-* | awk '{ print $1 }')

read -r p50 p99 pmax <<<"$(ping_latency "$KPORT")"
ping_latency "$KPORT" >"$TMP/during" &
lat=$!
sleep 0.2
t0=$(date +%s.%N)
cut=$("$KAVACH" record --cut "$TMP/cuts")
t1=$(date +%s.%N)
wait "$lat"
read -r c50 c99 cmax <"$TMP/during"
size=$(stat -c %s "$cut")
steps=$("$KAVACH" show --json "$cut" | wc -l)

echo
echo "kavach record --keep: a cut of a $MB MB stretch ($n SETs of $SIZE bytes); $(nproc) cores"
awk -v s="$segs" -v k="$KEEPB" 'BEGIN { printf "segments on disk:  %.1f MiB (--keep-bytes %.1f MiB)\n", s / 1048576, k / 1048576 }'
awk -v a="$t0" -v b="$t1" -v z="$size" -v n="$steps" 'BEGIN { printf "cut:               %.2f s from kavach record --cut to its path printed; %.1f MiB, %d steps\n", b - a, z / 1048576, n }'
echo "PING latency, ms:  p50 $p50, p99 $p99, max $pmax without a cut; p50 $c50, p99 $c99, max $cmax while the cut is written"
