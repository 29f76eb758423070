#!/usr/bin/env bash
# What the virtual clock costs the build: the same Redis build driven by
# redis-benchmark with one client doing round trips (-c 1 -P 1), unfaked
# and under Kavach's clock library (replay/clocklib, a frozen page), pair
# by pair, alternating which goes first; and, where libfaketime is
# installed, under libfaketime as the replay used to run it (timestamp
# file, no cache), for comparison. Prints each pair and the median ratios.
#
#   bench/clock.sh                       (REPS=7 pairs, N=50000 requests each)
#   BUILD=/usr/bin/redis-server bench/clock.sh   (Debian's packaged server)
#
# The bar (docs/replay.md): the faked build at >= 0.95 of itself unfaked.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-50000}
REPS=${REPS:-7}
BUILD=${BUILD:-$(scripts/redis-build.sh)}
LIBFAKETIME=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
LIB=$(go run ./internal/clockbuild -page "$work/page")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

start() { # start ENV... : the build under that environment
	env "$@" "$BUILD" --port "$port" --save "" --appendonly no >"$work/log" 2>&1 &
	pid=$!
	for _ in $(seq 200); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.05; done
	echo "the build did not start under: $*" >&2; cat "$work/log" >&2; exit 1
}
# SIGKILL: under a frozen clock Redis acts on SIGTERM only in its timer,
# which a frozen clock never runs (a replay lets the clock run first).
stop() { kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
rps() { # rps ENV... : requests per second of SET and GET round trips
	start "$@"
	redis-benchmark -p "$port" -c 1 -n "$N" -P 1 -t set,get --csv -q | awk -F'"' 'NR>1 {s+=$4; n++} END {printf "%d", s/n}'
	stop
}
clock=(LD_PRELOAD="$LIB" KAVACH_CLOCK="$work/page" TZ=UTC)
faketime=()
if [ -f "$LIBFAKETIME" ]; then
	printf '%s\n' "2030-01-01 00:00:00.000500" >"$work/ts"
	faketime=(LD_PRELOAD="$LIBFAKETIME" FAKETIME_TIMESTAMP_FILE="$work/ts" FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 TZ=UTC)
fi

echo "build: $BUILD"
echo "requests/s of redis-benchmark -c 1 -P 1 -t set,get, N=$N, $REPS pairs (order alternates)"
printf '%-4s %10s %10s %8s' rep direct clock ratio
[ ${#faketime[@]} -gt 0 ] && printf ' %10s %8s' libfaketime ratio
echo
ratios=()
fratios=()
for rep in $(seq "$REPS"); do
	if [ $((rep % 2)) -eq 1 ]; then d=$(rps); c=$(rps "${clock[@]}"); else c=$(rps "${clock[@]}"); d=$(rps); fi
	r=$(awk -v c="$c" -v d="$d" 'BEGIN {printf "%.3f", c/d}')
	ratios+=("$r")
	printf '%-4s %10s %10s %8s' "$rep" "$d" "$c" "$r"
	if [ ${#faketime[@]} -gt 0 ]; then
		f=$(rps "${faketime[@]}")
		fr=$(awk -v f="$f" -v d="$d" 'BEGIN {printf "%.3f", f/d}')
		fratios+=("$fr")
		printf ' %10s %8s' "$f" "$fr"
	fi
	echo
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median ratio, clock library / direct: $(median "${ratios[@]}") (bar: 0.95)"
[ ${#fratios[@]} -gt 0 ] && echo "median ratio, libfaketime / direct:   $(median "${fratios[@]}")"
exit 0
