#!/usr/bin/env bash
# Measures the mechanisms libfaketime offers for moving a build's clock,
# on Redis built from source (MALLOC=libc): what each costs per command
# and whether a clock change is seen by the very next command. Prints a
# table; docs/replay.md holds the figures and the choice made from them.
#
#   bench/faketime.sh            (N=100000 commands per measurement)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100000}
LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
[ -f "$LIB" ] || { echo "libfaketime missing: scripts/deps.sh installs it" >&2; exit 1; }
REDIS=$(scripts/redis-build.sh)
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ts="$work/ts"
mode=file
setclock() { # setclock "YYYY-MM-DD hh:mm:ss.ffffff" (UTC)
	if [ "$mode" = follow ]; then
		touch "$ts"; TZ=UTC touch -d "$1" "$ts"
	else
		printf '%s\n' "$1" > "$ts.tmp"; mv "$ts.tmp" "$ts"
	fi
}

start() { # start ENV... : a redis under that environment
	env "$@" "$REDIS" --port "$port" --save "" --appendonly no --hz 100 >"$work/log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.05; done
	echo "redis did not start under: $*" >&2; cat "$work/log" >&2; exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }

rps() { # rps TEST PIPELINE : requests per second of redis-benchmark
	redis-benchmark -p "$port" -c 1 -n "$N" -P "$2" -t "$1" --csv -q | awk -F'"' 'NR==2 {print int($4)}'
}

# fresh: after a clock change, does the next TIME see it?
fresh() {
	setclock "2031-01-01 00:00:00.000000"
	local t; t=$(redis-cli -p "$port" TIME | head -1)
	[ "$t" = 1924992000 ] && echo yes || echo "no (saw $t)"
}

printf '%-44s %10s %10s %12s %s\n' mechanism "SET -P1" "SET -P64" "TIME -P64" "change seen at once"
run() { # run NAME ENV...
	local name=$1; shift
	setclock "2030-01-01 00:00:00.000000"
	start "$@"
	local a b c f
	a=$(rps set 1); b=$(rps set 64)
	c=$(redis-benchmark -p "$port" -c 1 -n "$N" -P 64 --csv -q TIME | awk -F'"' 'NR==2 {print int($4)}')
	if [ "$#" -eq 0 ]; then f="n/a (real time)"; else f=$(fresh); fi
	printf '%-44s %10s %10s %12s %s\n' "$name" "$a" "$b" "$c" "$f"
	stop
}
base=(LD_PRELOAD=$LIB FAKETIME_TIMESTAMP_FILE=$ts FAKETIME_DONT_FAKE_MONOTONIC=1 TZ=UTC)
run "no libfaketime (direct)"
run "timestamp file, FAKETIME_NO_CACHE=1 (chosen)" "${base[@]}" FAKETIME_NO_CACHE=1
run "timestamp file, default cache (10 s)" "${base[@]}"
run "timestamp file, FAKETIME_CACHE_DURATION=1" "${base[@]}" FAKETIME_CACHE_DURATION=1
mode=follow
run "file mtime (FAKETIME=% FOLLOW_FILE), NO_CACHE=1" LD_PRELOAD=$LIB FAKETIME=% FAKETIME_FOLLOW_FILE=$ts FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 TZ=UTC
echo
echo "rps: redis-benchmark requests per second, one client, N=$N; higher is cheaper."
echo "The fourth column is whether TIME, sent right after the timestamp file was renamed into"
echo "place, reports the new time: a cache that serves the old time for a while is not correct"
echo "for replay, where the clock moves before every step."
