#!/usr/bin/env bash
# redis-suite.sh [UNIT...]
#
# Redis's own test suite, recorded through Kavach and replayed: the
# hardest test of the promise that what happened on the old build happens
# again in the replay, written by nobody on the team.
#
# It builds Redis from the Debian source package the project already
# builds (scripts/redis-build.sh: MALLOC=libc, cached), starts it with the
# DEBUG command enabled (the suite logs each test's start with it), puts
# `kavach record --upstream` in front of it, runs the suite's units given
# (default: the thirteen of docs/redis-suite.md) through the recorder with
# the suite's own runner, then replays the fixture once on the same build
# (`kavach replay --runs 1`) and prints:
#
#   tests      how many of the suite's tests passed and failed through the recorder
#   recording  how long the suite took through the recorder; requests, connections
#   replay     how long the replay took, and its ratio to the recording
#   steps      equal, noise (and its share), different, not-run
#   result     the replay's own result line
#
# It exits 1 when a test failed through the recorder, a step is different
# or not run, the replay did not reproduce, or noise is over 0.2 % of the
# steps; 2 when it could not run. Times are printed, never judged (the
# machines are shared). KAVACH names the kavach binary (default: built
# into bin/kavach); KEEP=1 keeps the work directory (it is kept, and named,
# on a failure anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prog=redis-suite

units=("$@")
if [ ${#units[@]} -eq 0 ]; then
	units=(unit/type/incr unit/type/string unit/type/list unit/type/hash unit/expire
		unit/keyspace unit/scripting
		unit/type/zset unit/pubsub unit/bitops unit/hyperloglog unit/geo unit/tracking)
fi

tclsh=""
for v in 8.5 8.6 8.7; do
	t=$(command -v "tclsh$v" 2>/dev/null) && tclsh=$t
done
if [ -z "$tclsh" ]; then
	echo "$prog: the suite's runner needs tclsh 8.5 or newer (scripts/deps.sh installs tcl8.6)" >&2
	exit 2
fi

kavach=${KAVACH:-}
if [ -z "$kavach" ]; then
	kavach=$root/bin/kavach
	go build -o "$kavach" ./cmd/kavach
fi
server=$(scripts/redis-build.sh)
cache=${KAVACH_CACHE_DIR:-$HOME/.cache/kavach}
version=$(cat "$cache/redis/current-version")
src=$cache/redis/src-${version#*:}
if [ ! -x "$src/runtest" ]; then
	echo "$prog: no runtest in $src (the source redis-build.sh unpacked)" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kavach-redis-suite.XXXXXX")
pids=()
status=2
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [ "$status" -eq 0 ] && [ -z "${KEEP:-}" ]; then
		rm -rf "$work"
	else
		echo "$prog: work directory kept: $work" >&2
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The suite writes under tests/tmp: it runs from a copy, not from the cache.
cp -r "$src/tests" "$src/runtest" "$work/"
cat >"$work/server.sh" <<EOF
#!/bin/sh
exec "$server" "\$@" --enable-debug-command yes
EOF
chmod +x "$work/server.sh"

# The service: on a free port (tried until one is).
port=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
	p=$((20000 + RANDOM % 30000))
	"$work/server.sh" --port "$p" --bind 127.0.0.1 --save '' --dir "$work" --daemonize no >"$work/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 50); do
		redis-cli -p "$p" ping >/dev/null 2>&1 && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	if redis-cli -p "$p" ping >/dev/null 2>&1; then
		port=$p
		pids+=("$spid")
		break
	fi
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
done
if [ -z "$port" ]; then
	echo "$prog: redis-server did not start on a free port; its log: $work/server.log" >&2
	exit 2
fi

# --keep-secrets: the suite's passwords are test data ("123", "foo"), and a
# password once seen is redacted wherever it is a whole value later
# (docs/security.md): BITCOUNT str 123 1088 would be recorded, and
# replayed, as BITCOUNT str <redacted> 1088.
"$kavach" record --protocol resp --out "$work/suite.kavach" --ready-file "$work/addr" \
	--keep-secrets --upstream "127.0.0.1:$port" >"$work/record.log" 2>&1 &
rpid=$!
pids+=("$rpid")
for _ in $(seq 300); do
	[ -s "$work/addr" ] && break
	kill -0 "$rpid" 2>/dev/null || break
	sleep 0.1
done
if [ ! -s "$work/addr" ]; then
	echo "$prog: kavach record did not start; its log: $work/record.log" >&2
	exit 2
fi
pport=$(sed 's/.*://' "$work/addr")

singles=()
for u in "${units[@]}"; do
	singles+=(--single "$u")
done
echo "$prog: ${#units[@]} units through kavach record: ${units[*]}" >&2
t0=$(date +%s.%N)
set +e
(cd "$work" && TERM=dumb ./runtest --host 127.0.0.1 --port "$pport" --clients 1 --timeout 600 "${singles[@]}") >"$work/runtest.log" 2>&1
runtest_rc=$?
set -e
t1=$(date +%s.%N)
kill -INT "$rpid"
wait "$rpid" || true
sed -i 's/\x1b\[[0-9;]*m//g' "$work/runtest.log"
passed=$(grep -c '^\[ok\]' "$work/runtest.log" || true)
failed=$(grep -c '^\[err\]\|^\[exception\]' "$work/runtest.log" || true)
if [ "$runtest_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	failed=1 # the runner itself failed: its log says why
fi
recorded=$(grep -o '[0-9]* requests, [0-9]* replies on [0-9]* connections' "$work/record.log" | head -1 || true)

echo "$prog: replaying $work/suite.kavach" >&2
t2=$(date +%s.%N)
set +e
"$kavach" replay --runs 1 "$work/server.sh" "$work/suite.kavach" >"$work/replay.out" 2>"$work/replay.err"
replay_rc=$?
set -e
t3=$(date +%s.%N)

result=$(sed -n 's/^result *//p' "$work/replay.out" | tail -1)
count() { # count STATUS: that status's count on the result line
	local n
	n=$(printf '%s\n' "$result" | grep -o "[0-9]* $1" | head -1 | cut -d' ' -f1)
	echo "${n:-0}"
}
equal=$(count equal)
noise=$(count noise)
different=$(count different)
notrun=$(count not-run)
steps=$((equal + noise + different + notrun))
rec_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
rep_s=$(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.1f", b - a }')
ratio=$(awk -v r="$rec_s" -v p="$rep_s" 'BEGIN { if (r > 0) printf "%.2f", p / r; else print "-" }')
share=$(awk -v n="$noise" -v s="$steps" 'BEGIN { if (s > 0) printf "%.3f", 100 * n / s; else print "0" }')

echo "tests      $passed passed, $failed failed (the suite's runner, through kavach record)"
echo "recording  ${rec_s}s, ${recorded:-?}"
echo "replay     ${rep_s}s, ${ratio} of the recording"
echo "steps      $equal equal, $noise noise ($share %), $different different, $notrun not-run"
echo "result     ${result:-none: kavach replay exited $replay_rc, see $work/replay.err}"

status=0
if [ "$failed" -ne 0 ]; then
	grep '^\[err\]\|^\[exception\]' "$work/runtest.log" | sed "s/^/$prog: /" >&2 || true
	status=1
fi
if [ "$different" -ne 0 ] || [ "$notrun" -ne 0 ] || [ "${result%% *}" != "reproduced" ]; then
	grep -E '^[0-9]+ +(different|not-run) ' "$work/replay.out" | head -5 | sed "s/^/$prog: /" >&2 || true
	status=1
fi
if awk -v n="$noise" -v s="$steps" 'BEGIN { exit !(s == 0 || n * 1000 > s * 2) }'; then
	echo "$prog: noise over 0.2 % of the steps (or no steps)" >&2
	status=1
fi
exit "$status"
