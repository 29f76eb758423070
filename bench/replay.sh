#!/usr/bin/env bash
# The replay's benchmark (docs/design.md §11: "replay: the round-trip rate of a
# single client talking to the service directly, within 20%"), and the
# virtual clock's speed-up (docs/design.md §6: a long incident replays in
# seconds). Two parts, all in this run:
#
# 1. Rate. One client does N sequential SETs and N sequential GETs
#    (redis-benchmark -c 1 -P 1 -t set,get) through `kavach record` in
#    front of Redis built from source (scripts/redis-build.sh). That
#    fixture is replayed with `kavach replay --runs 1`, and set against
#    redis-benchmark with the same N straight to a fresh redis-server of
#    the same build, once under the clock library exactly as a replay starts it
#    (a frozen page) and once without. The replay's rate is its
#    steps over its `wall` less the start-up (the `wall` of replaying a
#    one-step fixture). Diagnostics, to see where the time goes: the same
#    replay with its clock file on tmpfs (TMPDIR=/dev/shm) and with
#    --real-time (no virtual clock at all). Every measurement is repeated
#    REPS times, interleaved, and the median is reported.
#
# 2. Speed-up. A session of 10 commands with PAUSE-second pauses between
#    some of them (5 pauses: ≥ 10 s by default) is recorded and replayed;
#    the recorded duration over the replay's wall time is the speed-up
#    from not sleeping through the gaps.
#
# 3. Distinct milliseconds. Production traffic has a millisecond of its
#    own for almost every request: bench/scalegen -gap 1ms writes MS_STEPS
#    steps of one client (SETs and GETs, then the GETRANGE incident of
#    examples/redis-getrange-crash), one event a millisecond, so the
#    virtual clock moves before every request and no two requests can be
#    sent together. It is replayed on the build with that incident's bug
#    (it reproduces the crash at its last step), REPS times, interleaved
#    with direct round trips measured in the same run (redis-benchmark -c 1
#    -P 1 -t set,get, -n MS_STEPS/2 each, on a fresh server of the same
#    build, with and without the clock library) and with --real-time. The rate is
#    the steps over the replay's wall less the start-up (the wall of a
#    two-step fixture of the same generator).
#
# Exits 1 when a replay did not reproduce its recording (it should, every
# time); a ratio below the target is reported, not an error.
#
# Environment:
#   N        SETs and GETs of the recorded client (default 20000: a fixture of 2N+2 steps)
#   REPS     repetitions of each measurement (default 3)
#   PAUSE    seconds of each pause in part 2 (default 2)
#   MS_STEPS steps of the distinct-millisecond fixture of part 3 (default 20000)
#   PARTS    which parts to run (default "rate speedup millis")
#   KEEP=1   keep the temporary directory (fixtures, replay outputs, logs) and print it
set -euo pipefail

N=${N:-20000}
REPS=${REPS:-3}
PAUSE=${PAUSE:-2}
MS_STEPS=${MS_STEPS:-20000}
PARTS=${PARTS:-rate speedup millis}
part() { [[ " $PARTS " == *" $1 "* ]]; }
KEEP=${KEEP:-0}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KAVACH=$ROOT/bin/kavach

for cmd in go redis-cli redis-benchmark python3; do
	command -v "$cmd" >/dev/null || {
		echo "replay.sh: $cmd not found (apt-get install -y redis-tools python3; Go 1.26)" >&2
		exit 1
	}
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kavach-bench-replay.XXXXXX")
PIDS=()      # redis-servers started here
FAKED=()     # those of them under the clock
KPID=""      # the running kavach record, if any
XPID=""      # the running kavach replay, if any

cleanup() {
	local rc=$?
	set +e
	[ "$rc" != 0 ] && echo "replay.sh: stopping on status $rc" >&2
	if [ -n "$KPID" ] && kill -0 "$KPID" 2>/dev/null; then
		kill -INT "$KPID" 2>/dev/null
		wait "$KPID" 2>/dev/null
	fi
	if [ -n "$XPID" ] && kill -0 "$XPID" 2>/dev/null; then
		kill -INT "$XPID" 2>/dev/null
		wait "$XPID" 2>/dev/null
	fi
	for pid in "${PIDS[@]}"; do
		kill -9 "$pid" 2>/dev/null # a build under a frozen clock acts on SIGTERM only in its timer
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	for pid in "${FAKED[@]}"; do
		rm -f "/dev/shm/faketime_shm_$pid" "/dev/shm/sem.faketime_sem_$pid"
	done
	if [ "$KEEP" = 1 ]; then
		echo "replay.sh: kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
# bash 5.2 can fail to run a trap that interrupts a command substitution
# inside a double-quoted string ("trap: line 2: unexpected EOF while
# looking for matching `)'"), and exit 2 instead of 130 (cleanup still
# runs): the measuring loop assigns command substitutions to variables
# first.
on_signal() {
	echo "replay.sh: interrupted" >&2
	exit 130
}
trap on_signal INT TERM

log() { echo "replay.sh: $*" >&2; }

# free_port prints a loopback port nothing listens on, below the
# ephemeral range so that no client connection is given it meanwhile.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# wait_port PORT PID waits until PORT accepts connections, failing if PID dies.
wait_port() {
	local port=$1 pid=$2
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || { log "process $pid died before listening on $port"; return 1; }
		sleep 0.1
	done
	log "nothing listens on $port after 10s"
	return 1
}

# start_record FIXTURE starts `kavach record` in front of the build (it
# starts the build itself) and sets KPID and KPORT once it listens.
start_record() {
	local fx=$1 ready=$1.addr addr=""
	"$KAVACH" record --protocol resp --out "$fx" --ready-file "$ready" -- "$REDIS" 2>"$fx.log" &
	KPID=$!
	for _ in $(seq 200); do
		[ -s "$ready" ] && addr=$(cat "$ready")
		[[ $addr =~ ^[0-9.]+:[0-9]+$ ]] && break
		kill -0 "$KPID" 2>/dev/null || { log "kavach record died:"; cat "$fx.log" >&2; exit 1; }
		sleep 0.05
	done
	[[ $addr =~ ^[0-9.]+:[0-9]+$ ]] || { log "kavach record not ready after 10s"; exit 1; }
	KPORT=${addr##*:}
}

# stop_record ends the recording with SIGINT and checks it ended cleanly.
stop_record() {
	local fx=$1 rc=0
	kill -INT "$KPID"
	wait "$KPID" || rc=$?
	KPID=""
	if [ "$rc" != 0 ]; then
		log "kavach record exited with status $rc:"
		cat "$fx.log" >&2
		exit 1
	fi
}

# start_redis ENV... starts a fresh redis-server of the build with
# the settings a replay starts it with (no hz of its own: the build's default), under ENV, and
# sets RPID and RPORT.
start_redis() {
	RPORT=$(free_port)
	local dir
	dir=$(mktemp -d "$TMP/redis.XXXXXX")
	env "$@" "$REDIS" --port "$RPORT" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
		--daemonize no --logfile "" >"$dir/log" 2>&1 &
	RPID=$!
	PIDS+=("$RPID")
	[ $# -gt 0 ] && FAKED+=("$RPID")
	wait_port "$RPORT" "$RPID" || { cat "$dir/log" >&2; exit 1; }
}

stop_redis() {
	kill -9 "$RPID" 2>/dev/null || true # SIGTERM: acted on only in the timer, which a frozen clock never runs
	wait "$RPID" 2>/dev/null || true
	rm -f "/dev/shm/faketime_shm_$RPID" "/dev/shm/sem.faketime_sem_$RPID"
}

# bench PORT prints "SET_RPS GET_RPS" of one client, N requests each.
bench() {
	local out
	out=$(redis-benchmark -h 127.0.0.1 -p "$1" -c 1 -n "$N" -P 1 -t set,get -q --csv 2>>"$TMP/redis-benchmark.log") || {
		log "redis-benchmark on port $1 failed"; tail -5 "$TMP/redis-benchmark.log" >&2; return 1
	}
	awk -F'"' '$2 == "SET" { s = $4 } $2 == "GET" { g = $4 } END { if (s == "" || g == "") exit 1; print s, g }' <<<"$out" || {
		log "redis-benchmark on port $1 gave no SET/GET figures:"; echo "$out" >&2; return 1
	}
}

# seconds DURATION: a Go duration as printed by kavach ("1.234s", "850ms", "1m2.5s") in seconds.
seconds() {
	python3 -c '
import re, sys
units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
parts = re.findall(r"([0-9.]+)(ms|us|µs|ns|h|m|s)", sys.argv[1])
if not parts: sys.exit("not a duration: " + sys.argv[1])
print("%.6f" % sum(float(v) * units[u] for v, u in parts))' "$1"
}

now() { date +%s.%N; }

# replay NAME FIXTURE [ARGS...] replays FIXTURE once and appends
# "NAME STATUS WALL_SECONDS PROCESS_SECONDS" to $RESULTS; no `wall` printed
# (kavach could not replay) stops the script. A non-zero status is kept
# (its output as failed-NAME-TIME.out, with KEEP=1) and fails the run at the end.
# TMPDIR_FOR_KAVACH, when set, is the TMPDIR kavach replay gets (where its clock file goes).
replay() {
	local name=$1 fx=$2 out t0 t1 rc=0 wall
	shift 2
	out=$TMP/replay-$name.out
	t0=$(now)
	# In the background, so that a signal to this script stops it at once (cleanup).
	TMPDIR=${TMPDIR_FOR_KAVACH:-${TMPDIR:-/tmp}} "$KAVACH" replay --runs 1 "$@" "$REDIS" "$fx" >"$out" 2>&1 &
	XPID=$!
	wait "$XPID" || rc=$?
	XPID=""
	t1=$(now)
	wall=$(awk '$1 == "wall" { print $2; exit }' "$out")
	if [ -z "$wall" ]; then
		log "kavach replay of $fx ($name) printed no wall (status $rc):"
		tail -5 "$out" >&2
		exit 1
	fi
	if [ "$rc" != 0 ]; then
		log "kavach replay of $fx ($name) did not reproduce the recording (status $rc):"
		grep -v ' equal ' "$out" | tail -8 >&2
		cp "$out" "$TMP/failed-$name-$(date +%s).out"
	fi
	wall=$(seconds "$wall")
	t1=$(calc "%.6f" "$t1 - $t0")
	echo "$name $rc $wall $t1" >>"$RESULTS"
}

# median NAME COLUMN over $RESULTS
median() {
	awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$RESULTS" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
runs() { awk -v n="$1" -v c="$2" -v f="$3" '$1 == n { printf f "  ", $c }' "$RESULTS"; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# ---- build

log "building bin/kavach; the Redis build (scripts/redis-build.sh)"
if [ -n "${KAVACH_BIN:-}" ]; then
	KAVACH=$KAVACH_BIN # a kavach built elsewhere (a before-and-after comparison)
else
	go build -o "$KAVACH" ./cmd/kavach
fi
REDIS=$(scripts/redis-build.sh)
RESULTS=$TMP/results   # name status wall_s process_s | name set_rps get_rps
: >"$RESULTS"
bad=0

# The build under the clock exactly as a replay runs it: Kavach's clock
# library, a frozen page (internal/clockbuild writes one).
CLOCKLIB=$(go run ./internal/clockbuild -page "$TMP/clock-direct" -at 2026-01-01T00:00:00Z)
FAKEENV=(LD_PRELOAD="$CLOCKLIB" KAVACH_CLOCK="$TMP/clock-direct" TZ=UTC)

# ---- part 1: the rate

if part rate; then
FX=$TMP/long.kavach
log "recording $((2 * N)) round trips of one client (redis-benchmark -c 1 -n $N -P 1 -t set,get through kavach record)"
start_record "$FX"
rec=$(bench "$KPORT")
stop_record "$FX"
read -r rec_set rec_get <<<"$rec"
STEPS=$("$KAVACH" show --json "$FX" | wc -l)
log "fixture: $STEPS steps, $(stat -c %s "$FX") bytes; $(grep -o '[0-9]* requests, [0-9]* replies' "$FX.log")"

# The start-up cost: a one-step fixture (PING).
TINY=$TMP/tiny.kavach
start_record "$TINY"
redis-cli -p "$KPORT" PING >/dev/null
stop_record "$TINY"

t_start=$SECONDS
for rep in $(seq "$REPS"); do
	log "rep $rep/$REPS: kavach replay ($STEPS steps)"
	replay replay "$FX"
	log "rep $rep/$REPS: kavach replay of a one-step fixture (start-up)"
	replay startup "$TINY"
	log "rep $rep/$REPS: direct, under the clock library"
	start_redis "${FAKEENV[@]}"
	figures=$(bench "$RPORT")
	echo "direct-faketime $figures" >>"$RESULTS"
	stop_redis
	log "rep $rep/$REPS: direct"
	start_redis
	figures=$(bench "$RPORT")
	echo "direct $figures" >>"$RESULTS"
	stop_redis
	log "rep $rep/$REPS: kavach replay, clock file on tmpfs (TMPDIR=/dev/shm)"
	TMPDIR_FOR_KAVACH=/dev/shm replay replay-shm "$FX"
	log "rep $rep/$REPS: kavach replay --real-time"
	replay replay-real "$FX" --real-time
done
rate_secs=$((SECONDS - t_start))
fi

# ---- part 2: the virtual clock's speed-up

if part speedup; then
PFX=$TMP/pauses.kavach
log "recording 10 commands with 5 pauses of ${PAUSE}s"
start_record "$PFX"
cli() { redis-cli -p "$KPORT" "$@" >/dev/null; }
cli SET session:1 alice EX 30
sleep "$PAUSE"
cli TTL session:1
cli INCR visits
sleep "$PAUSE"
cli INCR visits
cli TTL session:1
sleep "$PAUSE"
cli SET lock 1 PX "$(calc "%d" "$PAUSE * 1500")"   # gone by the second EXISTS
sleep "$PAUSE"
cli EXISTS lock
sleep "$PAUSE"
cli EXISTS lock
cli GET visits
cli TTL session:1
stop_record "$PFX"
PSTEPS=$("$KAVACH" show --json "$PFX" | wc -l)
[ "$PSTEPS" = 10 ] || { log "the session with pauses has $PSTEPS steps, not 10:"; cat "$PFX.log" >&2; exit 1; }
# The recorded duration: the last step's offset from the start of the recording.
PREC=$("$KAVACH" show --json "$PFX" | tail -1 | python3 -c 'import json, sys; print("%.6f" % (json.load(sys.stdin)["offset_ns"] / 1e9))')
for rep in $(seq "$REPS"); do
	log "rep $rep/$REPS: kavach replay of the session with pauses"
	replay pauses "$PFX"
done
fi

# ---- part 3: distinct milliseconds

if part millis; then
OLD=$(scripts/redis-build.sh examples/redis-getrange-crash/bug.patch)
go build -o "$TMP/scalegen" ./bench/scalegen
MFX=$TMP/millis.kavach
MTINY=$TMP/millis-tiny.kavach
"$TMP/scalegen" -steps "$MS_STEPS" -gap 1ms -out "$MFX" >/dev/null
"$TMP/scalegen" -steps 2 -gap 1ms -out "$MTINY" >/dev/null
MN=$((MS_STEPS / 2))
for rep in $(seq "$REPS"); do
	log "rep $rep/$REPS: kavach replay of $MS_STEPS steps a millisecond apart"
	REDIS=$OLD replay millis "$MFX"
	log "rep $rep/$REPS: kavach replay of a two-step fixture of the same generator (start-up)"
	REDIS=$OLD replay millis-startup "$MTINY"
	log "rep $rep/$REPS: direct round trips ($MN SET + $MN GET), under the clock library and without"
	REDIS=$OLD start_redis "${FAKEENV[@]}"
	figures=$(N=$MN bench "$RPORT")
	echo "millis-direct-faketime $figures" >>"$RESULTS"
	stop_redis
	REDIS=$OLD start_redis
	figures=$(N=$MN bench "$RPORT")
	echo "millis-direct $figures" >>"$RESULTS"
	stop_redis
	log "rep $rep/$REPS: kavach replay --real-time of the same fixture"
	REDIS=$OLD replay millis-real "$MFX" --real-time
done
fi

for name in replay startup replay-shm replay-real pauses millis millis-startup millis-real; do
	if awk -v n="$name" '$1 == n && $2 != 0 { bad = 1 } END { exit !bad }' "$RESULTS"; then bad=1; fi
done

# ---- report

# combined SET+GET rate: requests over the time both tests took
combined() { calc "%.0f" "2 / (1 / $1 + 1 / $2)"; }
us() { calc "%.1f" "1e6 / $1"; }
verdict() { awk -v r="$1" 'BEGIN { print (r >= 0.80 ? "meets it" : "BELOW TARGET") }'; }

if part rate; then
W=$(median replay 3)
P=$(median replay 4)
S=$(median startup 3)
WS=$(median replay-shm 3)
WR=$(median replay-real 3)
REPLAY_RATE=$(calc "%.0f" "$STEPS / ($W - $S)")
REPLAY_RATE_INCL=$(calc "%.0f" "$STEPS / $W")
DS=$(median direct 2) DG=$(median direct 3)
FS=$(median direct-faketime 2) FG=$(median direct-faketime 3)
DIRECT=$(combined "$DS" "$DG")
FAKED_RATE=$(combined "$FS" "$FG")
SHM_RATE=$(calc "%.0f" "$STEPS / ($WS - $S)")
REAL_RATE=$(calc "%.0f" "$STEPS / ($WR - $S)")

echo
echo "kavach replay benchmark: one client, $N SET + $N GET (a fixture of $STEPS steps), median of $REPS interleaved runs"
echo "($rate_secs s of measuring); $(nproc) cores, $("$REDIS" --version | grep -o 'v=[^ ]*' | tr -d v=) redis built from source"
echo
printf "%-44s %12s %12s\n" "" "steps/s" "µs per step"
printf "%-44s %12s %12s\n" "kavach replay (wall less start-up)" "$REPLAY_RATE" "$(us "$REPLAY_RATE")"
printf "%-44s %12s %12s\n" "kavach replay (wall, start-up included)" "$REPLAY_RATE_INCL" "$(us "$REPLAY_RATE_INCL")"
printf "%-44s %12s %12s   [SET %.0f, GET %.0f]\n" "direct under the clock library (redis-benchmark)" "$FAKED_RATE" "$(us "$FAKED_RATE")" "$FS" "$FG"
printf "%-44s %12s %12s   [SET %.0f, GET %.0f]\n" "direct (redis-benchmark)" "$DIRECT" "$(us "$DIRECT")" "$DS" "$DG"
echo "  diagnostics (where the replay's time goes):"
printf "%-44s %12s %12s\n" "  replay, clock file on tmpfs (/dev/shm)" "$SHM_RATE" "$(us "$SHM_RATE")"
printf "%-44s %12s %12s\n" "  replay --real-time (no virtual clock)" "$REAL_RATE" "$(us "$REAL_RATE")"
echo
printf "replay wall %.3f s (the kavach process: %.3f s); start-up (one-step fixture) %.3f s\n" "$W" "$P" "$S"
echo "the recording itself, through kavach record: SET $rec_set, GET $rec_get requests/s"
echo
echo "every run, in the order measured:"
printf "  %-24s %s\n" "replay wall s" "$(runs replay 3 %.3f)"
printf "  %-24s %s\n" "startup wall s" "$(runs startup 3 %.3f)"
printf "  %-24s %s\n" "direct-faketime SET/GET" "$(awk '$1 == "direct-faketime" { printf "%.0f/%.0f  ", $2, $3 }' "$RESULTS")"
printf "  %-24s %s\n" "direct SET/GET" "$(awk '$1 == "direct" { printf "%.0f/%.0f  ", $2, $3 }' "$RESULTS")"
printf "  %-24s %s\n" "replay-shm wall s" "$(runs replay-shm 3 %.3f)"
printf "  %-24s %s\n" "replay-real wall s" "$(runs replay-real 3 %.3f)"
echo
R1=$(calc "%.2f" "$REPLAY_RATE / $DIRECT")
R2=$(calc "%.2f" "$REPLAY_RATE / $FAKED_RATE")
echo "kavach replay / direct                  = $R1 (target ≥ 0.80) [$(verdict "$R1")]"
echo "kavach replay / direct under the clock library = $R2 (what the replay adds beyond the clock library) [$(verdict "$R2")]"
fi

if part speedup; then
PW=$(median pauses 3)
PP=$(median pauses 4)
echo
echo "virtual clock: $PSTEPS steps recorded over $(calc "%.3f" "$PREC") s (5 pauses of ${PAUSE}s)"
printf "  replay wall %.3f s (the kavach process %.3f s), median of %s; runs: %s\n" "$PW" "$PP" "$REPS" "$(runs pauses 3 %.3f)"
echo "  speed-up: recorded / replay wall = $(calc "%.1f" "$PREC / $PW")x  (recorded / process = $(calc "%.1f" "$PREC / $PP")x)"
if part rate; then
	echo "  without start-up: $(calc "%.0f" "($PW - $S) * 1000") ms of replaying ($(calc "%.0f" "$PREC / ($PW - $S)")x)"
fi
fi

if part millis; then
MW=$(median millis 3)
MS=$(median millis-startup 3)
MR=$(median millis-real 3)
# steps over the wall less the start-up; "n/a" when the start-up is half
# the wall or more: the figure would be the start-up's noise (raise MS_STEPS)
mrate() { awk -v n="$((MS_STEPS - 2))" -v w="$1" -v s="$MS" 'BEGIN { if (w - s < 0.5 * w) print "n/a"; else printf "%.0f", n / (w - s) }'; }
M_RATE=$(mrate "$MW")
M_REAL=$(mrate "$MR")
MDS=$(median millis-direct 2) MDG=$(median millis-direct 3)
MFS=$(median millis-direct-faketime 2) MFG=$(median millis-direct-faketime 3)
M_DIRECT=$(combined "$MDS" "$MDG")
M_FAKED=$(combined "$MFS" "$MFG")
echo
echo "distinct milliseconds: $MS_STEPS steps of one client, one event a millisecond (bench/scalegen -gap 1ms), median of $REPS interleaved runs"
printf "%-44s %12s %12s\n" "" "steps/s" "µs per step"
printf "%-44s %12s %12s\n" "kavach replay (wall less start-up)" "$M_RATE" "$([ "$M_RATE" = n/a ] && echo n/a || us "$M_RATE")"
printf "%-44s %12s %12s   [SET %.0f, GET %.0f]\n" "direct under the clock library (redis-benchmark)" "$M_FAKED" "$(us "$M_FAKED")" "$MFS" "$MFG"
printf "%-44s %12s %12s   [SET %.0f, GET %.0f]\n" "direct (redis-benchmark)" "$M_DIRECT" "$(us "$M_DIRECT")" "$MDS" "$MDG"
printf "%-44s %12s %12s\n" "  replay --real-time (no virtual clock)" "$M_REAL" "$([ "$M_REAL" = n/a ] && echo n/a || us "$M_REAL")"
printf "replay wall %.3f s; start-up (two-step fixture) %.3f s\n" "$MW" "$MS"
printf "  %-24s %s\n" "millis wall s" "$(runs millis 3 %.3f)"
printf "  %-24s %s\n" "millis-startup wall s" "$(runs millis-startup 3 %.3f)"
printf "  %-24s %s\n" "millis-real wall s" "$(runs millis-real 3 %.3f)"
printf "  %-24s %s\n" "direct-faketime SET/GET" "$(awk '$1 == "millis-direct-faketime" { printf "%.0f/%.0f  ", $2, $3 }' "$RESULTS")"
printf "  %-24s %s\n" "direct SET/GET" "$(awk '$1 == "millis-direct" { printf "%.0f/%.0f  ", $2, $3 }' "$RESULTS")"
if [ "$M_RATE" = n/a ]; then
	echo "distinct ms: no ratio: the start-up was half the replay's wall or more (raise MS_STEPS)"
else
	R3=$(calc "%.3f" "$M_RATE / $M_DIRECT")
	R4=$(calc "%.3f" "$M_RATE / $M_FAKED")
	echo "distinct ms: kavach replay / direct                   = $R3 (target ≥ 0.80) [$(verdict "$R3")]"
	echo "distinct ms: kavach replay / direct under the clock library = $R4"
fi
# The ceiling: the build itself under the clock library
# (a frozen page), driven as fast as a client can, with no replay at all.
# A replay that moves the build's clock with it cannot beat it.
RC=$(calc "%.3f" "$M_FAKED / $M_DIRECT")
echo "distinct ms: ceiling, direct under the clock library / direct = $RC$(awk -v c="$RC" 'BEGIN { if (c < 0.8) print " (below 0.80: the target cannot be met by any replay under this clock on this run)" }')"
fi

if [ "$bad" = 1 ]; then
	echo
	echo "a replay did not reproduce its recording (kavach replay exited non-zero; see above)"
	exit 1
fi
